// The banlieue_host_v1 table the host hands each plugin: logging into the plugin's own
// spdlog logger, cancellation from the call's deadline and the process's stop flag, and
// events routed to whoever records them (the provider runtime installs a Kubernetes
// recorder; until then events are logged).
#pragma once

#include <banlieue/provider_v1.h>

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace banlieue::plugin {

// What host_call_ctx points at during a call. It lives on the calling frame, so the plugin
// may use it (through is_cancelled) only while the call is in flight, as the ABI says.
struct CallState {
  std::chrono::steady_clock::time_point deadline;  // immune to wall-clock jumps
  const std::atomic<bool>* cancel = nullptr;       // per-call or per-process stop flag, optional
};

struct PluginEvent {
  std::string object_uid;
  banlieue_event_type type;
  std::string reason;
  std::string message;
};

class HostServices {
 public:
  using EventHandler = std::function<void(const PluginEvent&)>;

  // plugin_name names the logger ("provider.<name>").
  explicit HostServices(const std::string& plugin_name);
  HostServices(const HostServices&) = delete;
  HostServices& operator=(const HostServices&) = delete;

  const banlieue_host_v1* table() const { return &table_; }
  void setEventHandler(EventHandler handler);
  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }

  // Process-wide stop flag (SIGTERM, lost leadership): every call sees is_cancelled true.
  static std::atomic<bool>& processStopping();

  static int64_t nowUnixMs();

 private:
  // The slots. noexcept with catch-alls: nothing the host does may unwind into a plugin.
  static void log(void* ctx, banlieue_log_level level, const char* file, int32_t line,
                  const char* msg, size_t len) noexcept;
  static int32_t logEnabled(void* ctx, banlieue_log_level level) noexcept;
  static int32_t isCancelled(void* ctx, const banlieue_call* call) noexcept;
  static int64_t remainingMs(void* ctx, const banlieue_call* call) noexcept;
  static void emitEvent(void* ctx, const banlieue_call* call, banlieue_event_type type,
                        banlieue_str reason, banlieue_str message) noexcept;

  banlieue_host_v1 table_{};
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<EventHandler> event_handler_;
};

}  // namespace banlieue::plugin
