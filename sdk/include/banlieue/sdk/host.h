// The plugin's view of the host: logging, cancellation and events, through the host table
// handed to banlieue_provider_v1_init. Thin, allocation-free wrappers over the C slots.
#pragma once

#include <banlieue/provider_v1.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace banlieue::sdk {

enum class LogLevel : banlieue_log_level {
  kTrace = BANLIEUE_LOG_TRACE,
  kDebug = BANLIEUE_LOG_DEBUG,
  kInfo = BANLIEUE_LOG_INFO,
  kWarn = BANLIEUE_LOG_WARN,
  kError = BANLIEUE_LOG_ERROR,
  kCritical = BANLIEUE_LOG_CRITICAL,
};

class Host {
 public:
  explicit Host(const banlieue_host_v1* table = nullptr) : table_(table) {}

  bool logEnabled(LogLevel level) const {
    return BANLIEUE_HOST_HAS(table_, log_enabled) &&
           table_->log_enabled(table_->host_ctx, static_cast<banlieue_log_level>(level)) != 0;
  }
  void log(LogLevel level, std::string_view message, const char* file = nullptr,
           int line = 0) const {
    if (BANLIEUE_HOST_HAS(table_, log)) {
      table_->log(table_->host_ctx, static_cast<banlieue_log_level>(level), file, line,
                  message.data(), message.size());
    }
  }
  const banlieue_host_v1* table() const { return table_; }

 private:
  const banlieue_host_v1* table_;
};

// The process-wide host, set once by the SDK's init trampoline.
inline Host& host() {
  static Host instance;
  return instance;
}

// One call in flight: its deadline, cancellation and the object it is about.
class Call {
 public:
  explicit Call(const banlieue_call* call) : call_(call) {}

  std::string_view objectUid() const {
    return call_ && call_->object_uid.data
               ? std::string_view(call_->object_uid.data, call_->object_uid.len)
               : std::string_view{};
  }
  uint32_t attempt() const { return call_ ? call_->attempt : 0; }
  uint64_t id() const { return call_ ? call_->call_id : 0; }

  // Time left before the deadline (zero when it has passed or the call was cancelled). Pass
  // it to backend timeouts. A 1.1 host answers from its monotonic clock; a 1.0 host's table
  // has no remaining_ms, and the wall-clock deadline of the call is used instead.
  std::chrono::milliseconds remaining() const {
    const banlieue_host_v1* table = host().table();
    if (call_ != nullptr && BANLIEUE_HOST_HAS(table, remaining_ms)) {
      int64_t left = table->remaining_ms(table->host_ctx, call_);
      return left < 0 ? std::chrono::hours(1) : std::chrono::milliseconds(left);
    }
    if (call_ == nullptr || call_->deadline_unix_ms <= 0) return std::chrono::hours(1);
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    return std::chrono::milliseconds(std::max<int64_t>(0, call_->deadline_unix_ms - now));
  }

  // The deadline as a point on the monotonic clock, for backend clients that take one.
  std::chrono::steady_clock::time_point deadline() const {
    return std::chrono::steady_clock::now() + remaining();
  }

  // True once the host wants this call to stop (deadline, shutdown, leadership lost).
  bool cancelled() const {
    const banlieue_host_v1* table = host().table();
    return BANLIEUE_HOST_HAS(table, is_cancelled) &&
           table->is_cancelled(table->host_ctx, call_) != 0;
  }

  void event(banlieue_event_type type, std::string_view reason, std::string_view message) const {
    const banlieue_host_v1* table = host().table();
    if (BANLIEUE_HOST_HAS(table, emit_event)) {
      table->emit_event(table->host_ctx, call_, type, {reason.data(), reason.size()},
                        {message.data(), message.size()});
    }
  }

  const banlieue_call* raw() const { return call_; }

 private:
  const banlieue_call* call_;
};

}  // namespace banlieue::sdk

// BANLIEUE_LOG(kInfo, "cloned " + name): checks log_enabled before building the message.
#define BANLIEUE_LOG(level, message_expr)                                                     \
  do {                                                                                        \
    if (::banlieue::sdk::host().logEnabled(::banlieue::sdk::LogLevel::level)) {               \
      ::banlieue::sdk::host().log(::banlieue::sdk::LogLevel::level, (message_expr), __FILE__, \
                                  __LINE__);                                                  \
    }                                                                                         \
  } while (0)
