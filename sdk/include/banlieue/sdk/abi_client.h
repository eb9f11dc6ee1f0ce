// The calling side of banlieue_provider_v1: what a host does with a provider table. Used by
// the banlieue host's loader and by the SDK's fake host, so both follow the same rules:
//  - the plugin's table is copied into a zeroed local clamped to its struct_size, so slots
//    an older (shorter) table lacks read as NULL;
//  - a NULL slot answers UNIMPLEMENTED without calling anything;
//  - every output arrives through host-owned sinks and is copied at once.
#pragma once

#include <banlieue/provider_v1.h>
#include <banlieue/sdk/status.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

namespace banlieue::sdk::abi {

// Size caps on what a plugin may write per call (see banlieue_sink in the ABI header).
inline constexpr size_t kMaxBodyBytes = 8u << 20;
inline constexpr size_t kMaxMessageBytes = 32u << 10;
inline constexpr size_t kMaxReasonBytes = 128;

// A banlieue_sink that appends into a std::string it owns, up to a cap; past the cap it
// refuses (returns 1) and remembers that output was cut.
class StringSink {
 public:
  explicit StringSink(size_t limit = kMaxBodyBytes) : limit_(limit) {}
  banlieue_sink sink() { return {this, &StringSink::append}; }
  std::string& text() { return text_; }
  bool truncated() const { return truncated_; }

 private:
  static int32_t append(void* ctx, const char* data, size_t len) noexcept {
    auto* self = static_cast<StringSink*>(ctx);
    if (data == nullptr || len == 0) return 0;
    size_t room = self->limit_ - std::min(self->limit_, self->text_.size());
    try {
      self->text_.append(data, std::min(room, len));
    } catch (...) {
      self->truncated_ = true;
      return 1;
    }
    if (len > room) {
      self->truncated_ = true;
      return 1;
    }
    return 0;
  }
  size_t limit_;
  std::string text_;
  bool truncated_ = false;
};

// Everything one call produced.
struct CallOutcome {
  banlieue_status code = BANLIEUE_OK;
  std::string body;
  std::string message;
  std::string reason;
  int64_t requeue_after_ms = -1;
  bool truncated = false;  // the plugin wrote more than a sink's cap

  bool ok() const { return code == BANLIEUE_OK; }
  std::string codeName() const { return sdk::codeName(code); }
};

inline banlieue_str str(std::string_view s) {
  return {s.data(), s.size()};
}

// Runs fn(banlieue_reply*) with fresh sinks and collects the outcome.
template <class Fn>
CallOutcome invoke(Fn&& fn) {
  StringSink body(kMaxBodyBytes), message(kMaxMessageBytes), reason(kMaxReasonBytes);
  banlieue_reply reply{};
  reply.struct_size = sizeof(banlieue_reply);
  reply.body = body.sink();
  reply.message = message.sink();
  reply.reason = reason.sink();
  reply.requeue_after_ms = -1;
  CallOutcome outcome;
  outcome.code = fn(&reply);
  outcome.body = std::move(body.text());
  outcome.message = std::move(message.text());
  outcome.reason = std::move(reason.text());
  outcome.requeue_after_ms = reply.requeue_after_ms;
  outcome.truncated = body.truncated() || message.truncated() || reason.truncated();
  return outcome;
}

class ProviderClient {
 public:
  ProviderClient() { std::memset(&table_, 0, sizeof(table_)); }
  // Copies min(table->header.struct_size, sizeof(banlieue_provider_v1)) bytes.
  explicit ProviderClient(const banlieue_provider_v1* table) : ProviderClient() {
    if (table != nullptr) {
      size_t n = std::min<size_t>(table->header.struct_size, sizeof(banlieue_provider_v1));
      std::memcpy(&table_, table, n);
    }
  }

  const banlieue_provider_v1& table() const { return table_; }
  std::string_view name() const { return table_.name ? table_.name : ""; }

  CallOutcome describe(const banlieue_call& call) const {
    if (!table_.describe) return missing("describe");
    return invoke([&](banlieue_reply* r) { return table_.describe(&call, r); });
  }
  CallOutcome instanceCreate(const banlieue_call& call, std::string_view config,
                             banlieue_instance** out) const {
    *out = nullptr;
    if (!table_.instance_create) return missing("instance_create");
    return invoke(
        [&](banlieue_reply* r) { return table_.instance_create(&call, str(config), out, r); });
  }
  void instanceDestroy(banlieue_instance* instance, const banlieue_call& call) const {
    if (instance != nullptr && table_.instance_destroy) table_.instance_destroy(instance, &call);
  }
  CallOutcome validate(const banlieue_call& call, std::string_view kind,
                       std::string_view request) const {
    if (!table_.validate) return missing("validate");
    return invoke(
        [&](banlieue_reply* r) { return table_.validate(&call, str(kind), str(request), r); });
  }
  CallOutcome introspect(banlieue_instance* instance, const banlieue_call& call,
                         std::string_view request) const {
    if (!table_.introspect) return missing("introspect");
    return invoke(
        [&](banlieue_reply* r) { return table_.introspect(instance, &call, str(request), r); });
  }
  CallOutcome reconcile(banlieue_instance* instance, const banlieue_call& call,
                        std::string_view kind, std::string_view request) const {
    if (!table_.reconcile) return missing("reconcile");
    return invoke([&](banlieue_reply* r) {
      return table_.reconcile(instance, &call, str(kind), str(request), r);
    });
  }
  CallOutcome finalize(banlieue_instance* instance, const banlieue_call& call,
                       std::string_view kind, std::string_view request) const {
    if (!table_.finalize) return missing("finalize");
    return invoke([&](banlieue_reply* r) {
      return table_.finalize(instance, &call, str(kind), str(request), r);
    });
  }
  CallOutcome importImage(banlieue_instance* instance, const banlieue_call& call,
                          std::string_view request) const {
    if (!table_.import_image) return missing("import_image");
    return invoke(
        [&](banlieue_reply* r) { return table_.import_image(instance, &call, str(request), r); });
  }
  // SINCE 1.1: a 1.0 plugin's table ends before this slot, so it answers NotSupportedByBackend.
  CallOutcome deleteImage(banlieue_instance* instance, const banlieue_call& call,
                          std::string_view request) const {
    if (!table_.delete_image) return missing("delete_image");
    return invoke(
        [&](banlieue_reply* r) { return table_.delete_image(instance, &call, str(request), r); });
  }
  // SINCE 1.2: a 1.0 or 1.1 plugin's table ends before this slot (NotSupportedByBackend).
  CallOutcome snapshot(banlieue_instance* instance, const banlieue_call& call,
                       std::string_view request) const {
    if (!table_.snapshot) return missing("snapshot");
    return invoke(
        [&](banlieue_reply* r) { return table_.snapshot(instance, &call, str(request), r); });
  }
  // SINCE 1.3: a console needs all four console slots; a table without them (older, or one
  // that leaves any NULL) does not offer consoles (NotSupportedByBackend). On OK *out is the
  // open console, to be released with consoleClose; otherwise NULL.
  bool offersConsole() const {
    return table_.console_open != nullptr && table_.console_read != nullptr &&
           table_.console_write != nullptr && table_.console_close != nullptr;
  }
  CallOutcome consoleOpen(banlieue_instance* instance, const banlieue_call& call,
                          std::string_view request, banlieue_console** out) const {
    *out = nullptr;
    if (!offersConsole()) return missing("console");
    return invoke([&](banlieue_reply* r) {
      return table_.console_open(instance, &call, str(request), out, r);
    });
  }
  banlieue_status consoleRead(banlieue_console* console, char* buf, size_t len, int32_t timeout_ms,
                              size_t* n) const {
    *n = 0;
    return table_.console_read(console, buf, len, timeout_ms, n);
  }
  banlieue_status consoleWrite(banlieue_console* console, std::string_view data, size_t* n) const {
    *n = 0;
    return table_.console_write(console, data.data(), data.size(), n);
  }
  void consoleClose(banlieue_console* console) const {
    if (console != nullptr) table_.console_close(console);
  }
  // SINCE 1.4: a table that ends before this slot (or leaves it NULL) has no change feed
  // (NotSupportedByBackend); the host then keeps checking each machine on its resync.
  CallOutcome watchChanges(banlieue_instance* instance, const banlieue_call& call,
                           std::string_view request) const {
    if (!table_.watch_changes) return missing("watch_changes");
    return invoke(
        [&](banlieue_reply* r) { return table_.watch_changes(instance, &call, str(request), r); });
  }

 private:
  CallOutcome missing(const char* slot) const {
    CallOutcome outcome;
    outcome.code = BANLIEUE_UNIMPLEMENTED;
    // The reason a Condition shows when a request meets a plugin without the slot (an older
    // plugin, or one that leaves it NULL): the same words as the SDK's default answer.
    outcome.reason = "NotSupportedByBackend";
    outcome.message = std::string(slot) + " is not supported by this backend (plugin '" +
                      std::string(name()) + "', table of ABI " +
                      std::to_string(table_.header.abi_major) + "." +
                      std::to_string(table_.header.abi_minor) + ", " +
                      std::to_string(table_.header.struct_size) + " bytes)";
    return outcome;
  }

  banlieue_provider_v1 table_;
};

}  // namespace banlieue::sdk::abi
