#include "host/plugin/host_services.h"

#include "host/common/logging.h"

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
                       const char* msg, size_t len) {
  auto* self = static_cast<HostServices*>(ctx);
  if (self == nullptr || msg == nullptr) return;
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
}

int32_t HostServices::logEnabled(void* ctx, banlieue_log_level level) {
  auto* self = static_cast<HostServices*>(ctx);
  if (self == nullptr || level < BANLIEUE_LOG_TRACE || level > BANLIEUE_LOG_CRITICAL) return 0;
  return self->logger_->should_log(static_cast<spdlog::level::level_enum>(level)) ? 1 : 0;
}

int32_t HostServices::isCancelled(void* /*ctx*/, const banlieue_call* call) {
  if (processStopping().load(std::memory_order_relaxed)) return 1;
  if (call == nullptr) return 0;
  if (call->deadline_unix_ms > 0 && nowUnixMs() >= call->deadline_unix_ms) return 1;
  const auto* state = static_cast<const CallState*>(call->host_call_ctx);
  return state != nullptr && state->cancel != nullptr && state->cancel->load() ? 1 : 0;
}

void HostServices::emitEvent(void* ctx, const banlieue_call* call, banlieue_event_type type,
                             banlieue_str reason, banlieue_str message) {
  auto* self = static_cast<HostServices*>(ctx);
  if (self == nullptr) return;
  PluginEvent event{call != nullptr && call->object_uid.data != nullptr
                        ? std::string(call->object_uid.data, call->object_uid.len)
                        : std::string(),
                    type == BANLIEUE_EVENT_WARNING ? BANLIEUE_EVENT_WARNING : BANLIEUE_EVENT_NORMAL,
                    reason.data ? std::string(reason.data, reason.len) : std::string(),
                    message.data ? std::string(message.data, message.len) : std::string()};
  auto handler = std::atomic_load(&self->event_handler_);
  if (handler && *handler) {
    (*handler)(event);
  } else {
    self->logger_->info("event {} {} on uid {}: {}",
                        event.type == BANLIEUE_EVENT_WARNING ? "Warning" : "Normal", event.reason,
                        event.object_uid, event.message);
  }
}

}  // namespace banlieue::plugin
