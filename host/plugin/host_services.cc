#include "host/plugin/host_services.h"

#include "host/common/logging.h"

#include <algorithm>
#include <chrono>

namespace banlieue::plugin {

HostServices::HostServices(const std::string& plugin_name)
    : logger_(common::logger("provider." + plugin_name)),
      event_handler_(std::make_shared<EventHandler>()) {
  table_.header = {BANLIEUE_HOST_MAGIC, sizeof(banlieue_host_v1), BANLIEUE_ABI_MAJOR,
                   BANLIEUE_ABI_MINOR, BANLIEUE_V1_LAYOUT_FINGERPRINT};
  table_.host_ctx = this;
  table_.log = &HostServices::log;
  table_.log_enabled = &HostServices::logEnabled;
  table_.is_cancelled = &HostServices::isCancelled;
  table_.emit_event = &HostServices::emitEvent;
  table_.remaining_ms = &HostServices::remainingMs;
}

void HostServices::setEventHandler(EventHandler handler) {
  std::atomic_store(&event_handler_, std::make_shared<EventHandler>(std::move(handler)));
}

std::atomic<bool>& HostServices::processStopping() {
  static std::atomic<bool> stopping{false};
  return stopping;
}

int64_t HostServices::nowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void HostServices::log(void* ctx, banlieue_log_level level, const char* file, int32_t line,
                       const char* msg, size_t len) noexcept {
  auto* self = static_cast<HostServices*>(ctx);
  if (self == nullptr || msg == nullptr) return;
  try {
    // Clamp unknown levels instead of trusting the plugin's integer.
    int clamped = level < BANLIEUE_LOG_TRACE      ? BANLIEUE_LOG_TRACE
                  : level > BANLIEUE_LOG_CRITICAL ? BANLIEUE_LOG_CRITICAL
                                                  : level;
    auto spd_level = static_cast<spdlog::level::level_enum>(clamped);
    if (file != nullptr) {
      self->logger_->log(spdlog::source_loc{file, line, ""}, spd_level, "{}",
                         std::string_view(msg, len));
    } else {
      self->logger_->log(spd_level, "{}", std::string_view(msg, len));
    }
  } catch (...) {
    // A log line that cannot be written is dropped.
  }
}

int32_t HostServices::logEnabled(void* ctx, banlieue_log_level level) noexcept {
  auto* self = static_cast<HostServices*>(ctx);
  if (self == nullptr || level < BANLIEUE_LOG_TRACE || level > BANLIEUE_LOG_CRITICAL) return 0;
  return self->logger_->should_log(static_cast<spdlog::level::level_enum>(level)) ? 1 : 0;
}

int32_t HostServices::isCancelled(void* /*ctx*/, const banlieue_call* call) noexcept {
  if (processStopping().load(std::memory_order_relaxed)) return 1;
  if (call == nullptr) return 0;
  const auto* state = static_cast<const CallState*>(call->host_call_ctx);
  if (state == nullptr) {
    return call->deadline_unix_ms > 0 && nowUnixMs() >= call->deadline_unix_ms ? 1 : 0;
  }
  if (std::chrono::steady_clock::now() >= state->deadline) return 1;
  return state->cancel != nullptr && state->cancel->load() ? 1 : 0;
}

int64_t HostServices::remainingMs(void* ctx, const banlieue_call* call) noexcept {
  if (isCancelled(ctx, call) != 0) return 0;
  if (call == nullptr) return -1;
  const auto* state = static_cast<const CallState*>(call->host_call_ctx);
  if (state == nullptr) {
    // A call built without host state (tests): only the wall-clock deadline is known.
    if (call->deadline_unix_ms <= 0) return -1;
    return std::max<int64_t>(0, call->deadline_unix_ms - nowUnixMs());
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      state->deadline - std::chrono::steady_clock::now());
  return std::max<int64_t>(0, left.count());
}

void HostServices::emitEvent(void* ctx, const banlieue_call* call, banlieue_event_type type,
                             banlieue_str reason, banlieue_str message) noexcept {
  auto* self = static_cast<HostServices*>(ctx);
  if (self == nullptr) return;
  try {
    auto text = [](banlieue_str s) { return s.data ? std::string(s.data, s.len) : std::string(); };
    PluginEvent event{
        call != nullptr ? text(call->object_uid) : std::string(),
        type == BANLIEUE_EVENT_WARNING ? BANLIEUE_EVENT_WARNING : BANLIEUE_EVENT_NORMAL,
        text(reason), text(message)};
    auto handler = std::atomic_load(&self->event_handler_);
    if (handler && *handler) {
      (*handler)(event);
    } else {
      self->logger_->info("event {} {} on uid {}: {}",
                          event.type == BANLIEUE_EVENT_WARNING ? "Warning" : "Normal", event.reason,
                          event.object_uid, event.message);
    }
  } catch (...) {
    self->logger_->warn("dropped an event the plugin emitted (recording it failed)");
  }
}

}  // namespace banlieue::plugin
