// A fake host for plugin unit tests: runs a plugin's entry function in-process (link the
// plugin source into the test, with BANLIEUE_PROVIDER_ENTRY_NAME renamed) or through a
// dlopen'ed handle, records log lines and events, and lets a test cancel calls or set
// deadlines. Pass each call's inputs in buffers that die after the call (temporaries do) so
// that ASan reports a plugin that keeps a borrowed pointer.
#pragma once

#include <banlieue/provider_v1.h>
#include <banlieue/sdk/abi_client.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace banlieue::sdk::testing {

struct LogLine {
  banlieue_log_level level;
  std::string message;
};

struct Event {
  banlieue_event_type type;
  std::string object_uid;
  std::string reason;
  std::string message;
};

class FakeHost {
 public:
  FakeHost() {
    table_.header = {BANLIEUE_HOST_MAGIC, sizeof(banlieue_host_v1), BANLIEUE_ABI_MAJOR,
                     BANLIEUE_ABI_MINOR, BANLIEUE_V1_LAYOUT_FINGERPRINT};
    table_.host_ctx = this;
    table_.log = &FakeHost::log;
    table_.log_enabled = [](void*, banlieue_log_level) -> int32_t { return 1; };
    table_.is_cancelled = &FakeHost::isCancelled;
    table_.emit_event = &FakeHost::emitEvent;
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  const banlieue_host_v1* table() const { return &table_; }

  // Initialises a plugin through its entry function; throws std::runtime_error with the
  // plugin's message when it refuses.
  sdk::abi::ProviderClient load(banlieue_provider_v1_init_fn init) {
    sdk::abi::StringSink error;
    banlieue_sink sink = error.sink();
    const banlieue_provider_v1* table = init(&table_, BANLIEUE_ABI_MINOR, &sink);
    if (table == nullptr) throw std::runtime_error("plugin refused to initialise: " + error.text());
    return sdk::abi::ProviderClient(table);
  }

  // A call envelope with the given deadline from now.
  banlieue_call call(std::string_view object_uid = {},
                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    uid_storage_ = std::string(object_uid);
    banlieue_call c{};
    c.struct_size = sizeof(banlieue_call);
    c.call_id = ++next_call_id_;
    c.deadline_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             (std::chrono::system_clock::now() + timeout).time_since_epoch())
                             .count();
    c.object_uid = {uid_storage_.data(), uid_storage_.size()};
    c.host_call_ctx = this;
    return c;
  }

  void cancelAll(bool cancelled = true) { cancelled_ = cancelled; }

  std::vector<LogLine> logs() const {
    std::lock_guard lock(mutex_);
    return logs_;
  }
  std::vector<Event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  static void log(void* ctx, banlieue_log_level level, const char*, int32_t, const char* msg,
                  size_t len) {
    auto* self = static_cast<FakeHost*>(ctx);
    std::lock_guard lock(self->mutex_);
    self->logs_.push_back({level, std::string(msg, len)});
  }
  static int32_t isCancelled(void* ctx, const banlieue_call* call) {
    auto* self = static_cast<FakeHost*>(ctx);
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    return self->cancelled_.load() ||
           (call != nullptr && call->deadline_unix_ms > 0 && now >= call->deadline_unix_ms);
  }
  static void emitEvent(void* ctx, const banlieue_call* call, banlieue_event_type type,
                        banlieue_str reason, banlieue_str message) {
    auto* self = static_cast<FakeHost*>(ctx);
    std::lock_guard lock(self->mutex_);
    self->events_.push_back(
        {type, call ? std::string(call->object_uid.data, call->object_uid.len) : std::string(),
         std::string(reason.data, reason.len), std::string(message.data, message.len)});
  }

  banlieue_host_v1 table_{};
  std::atomic<bool> cancelled_{false};
  uint64_t next_call_id_ = 0;
  std::string uid_storage_;
  mutable std::mutex mutex_;
  std::vector<LogLine> logs_;
  std::vector<Event> events_;
};

}  // namespace banlieue::sdk::testing
