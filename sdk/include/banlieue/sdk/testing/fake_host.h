// A fake host for plugin unit tests: runs a plugin's entry function in-process (link the
// plugin source into the test, with BANLIEUE_PROVIDER_ENTRY_NAME renamed) or through a
// dlopen'ed handle, records log lines and events, and lets a test cancel calls or set
// deadlines. Pass each call's inputs in buffers that die after the call (temporaries do) so
// that ASan reports a plugin that keeps a borrowed pointer.
#pragma once

#include <banlieue/provider_v1.h>
#include <banlieue/sdk/abi_client.h>

#include <algorithm>
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
    table_.log_enabled = [](void*, banlieue_log_level) noexcept -> int32_t { return 1; };
    table_.is_cancelled = &FakeHost::isCancelled;
    table_.emit_event = &FakeHost::emitEvent;
    table_.remaining_ms = &FakeHost::remainingMs;
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  const banlieue_host_v1* table() const { return &table_; }

  // The process's one FakeHost, never destroyed. A plugin built with the SDK keeps the host
  // table of its latest initialisation for the whole process (sdk::host()), as a real host
  // initialises it once; so test drivers that load a plugin share this host rather than own
  // one each: otherwise, once the driver that loaded last is gone, every other driver's calls
  // log to and ask cancellation of a destroyed host. Call clearRecords() as a test starts.
  static FakeHost& shared() {
    static auto* host = new FakeHost();
    return *host;
  }

  // Initialises a plugin through its entry function; throws std::runtime_error with the
  // plugin's message when it refuses. Keep this FakeHost alive while any instance of the plugin
  // is in use (see shared()).
  sdk::abi::ProviderClient load(banlieue_provider_v1_init_fn init) {
    sdk::abi::StringSink error;
    banlieue_sink sink = error.sink();
    const banlieue_provider_v1* table = init(&table_, BANLIEUE_ABI_MINOR, &sink);
    if (table == nullptr) throw std::runtime_error("plugin refused to initialise: " + error.text());
    return sdk::abi::ProviderClient(table);
  }

  // A call envelope with the given deadline from now. It owns its object_uid, so several
  // may be alive at once; it converts to the banlieue_call ProviderClient takes.
  class FakeCall {
   public:
    FakeCall(FakeHost* host, std::string uid, uint64_t id, std::chrono::milliseconds timeout)
        : uid_(std::move(uid)) {
      call_.struct_size = sizeof(banlieue_call);
      call_.call_id = id;
      call_.deadline_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   (std::chrono::system_clock::now() + timeout).time_since_epoch())
                                   .count();
      call_.object_uid = {uid_.data(), uid_.size()};
      call_.host_call_ctx = host;
    }
    FakeCall(const FakeCall&) = delete;
    FakeCall& operator=(const FakeCall&) = delete;
    operator const banlieue_call&() const { return call_; }  // NOLINT(google-explicit-constructor)

   private:
    std::string uid_;
    banlieue_call call_{};
  };

  FakeCall call(std::string_view object_uid = {},
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return FakeCall(this, std::string(object_uid), ++next_call_id_, timeout);
  }

  void cancelAll(bool cancelled = true) { cancelled_ = cancelled; }

  // Forgets the recorded log lines and events and clears cancelAll.
  void clearRecords() {
    std::lock_guard lock(mutex_);
    logs_.clear();
    events_.clear();
    cancelled_ = false;
  }

  std::vector<LogLine> logs() const {
    std::lock_guard lock(mutex_);
    return logs_;
  }
  std::vector<Event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  static std::string text(banlieue_str s) {
    return s.data ? std::string(s.data, s.len) : std::string();
  }

  // Host slots never throw into the plugin: a failure to record is dropped.
  static void log(void* ctx, banlieue_log_level level, const char*, int32_t, const char* msg,
                  size_t len) noexcept {
    auto* self = static_cast<FakeHost*>(ctx);
    try {
      std::lock_guard lock(self->mutex_);
      self->logs_.push_back({level, msg ? std::string(msg, len) : std::string()});
    } catch (...) {
    }
  }
  static int32_t isCancelled(void* ctx, const banlieue_call* call) noexcept {
    auto* self = static_cast<FakeHost*>(ctx);
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    return self->cancelled_.load() ||
           (call != nullptr && call->deadline_unix_ms > 0 && now >= call->deadline_unix_ms);
  }
  static int64_t remainingMs(void* ctx, const banlieue_call* call) noexcept {
    if (isCancelled(ctx, call) != 0) return 0;
    if (call == nullptr || call->deadline_unix_ms <= 0) return -1;
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    return std::max<int64_t>(0, call->deadline_unix_ms - now);
  }
  static void emitEvent(void* ctx, const banlieue_call* call, banlieue_event_type type,
                        banlieue_str reason, banlieue_str message) noexcept {
    auto* self = static_cast<FakeHost*>(ctx);
    try {
      std::lock_guard lock(self->mutex_);
      self->events_.push_back(
          {type, call ? text(call->object_uid) : std::string(), text(reason), text(message)});
    } catch (...) {
    }
  }

  banlieue_host_v1 table_{};
  std::atomic<bool> cancelled_{false};
  std::atomic<uint64_t> next_call_id_{0};
  mutable std::mutex mutex_;
  std::vector<LogLine> logs_;
  std::vector<Event> events_;
};

}  // namespace banlieue::sdk::testing
