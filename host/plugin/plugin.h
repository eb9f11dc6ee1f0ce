// A loaded plugin and its instances, as the rest of the host uses them: every call gets a
// deadline and cancellation, its outcome is checked against the contract (known code,
// CamelCase reason, message on failure, output within the caps, returned before the
// deadline), and a NULL slot answers UNIMPLEMENTED.
#pragma once

#include "host/common/status_or.h"
#include "host/plugin/call_tracker.h"
#include "host/plugin/host_services.h"
#include "host/plugin/manifest.h"

#include <banlieue/sdk/abi_client.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace banlieue::plugin {

// How long instance_destroy may take (joining threads, logging out) when an instance goes.
inline constexpr std::chrono::seconds kDestroyTimeout{30};

struct CallOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::string object_uid;
  std::string object;  // "Kind ns/name", for what the host reports about a stuck or fatal call
  int64_t object_generation = 0;  // journaled: a quarantine lifts when the spec changes
  uint32_t attempt = 0;
  const std::atomic<bool>* cancel = nullptr;
  // A call that only looks (watch_changes): it changes nothing on the backend, so it is not
  // journaled against its object and does not keep a process that lost its Lease from
  // stepping down (CallTracker::inFlight).
  bool observes_only = false;
};

// The outcome of one call plus what the host noticed about it.
struct CallResult {
  sdk::abi::CallOutcome outcome;
  std::chrono::microseconds elapsed{0};
  std::chrono::milliseconds overran{0};  // > 0 when the plugin returned after its deadline
  std::vector<std::string> violations;   // contract breaches, already corrected in outcome

  bool ok() const { return outcome.ok(); }
  banlieue_status code() const { return outcome.code; }
};

class PluginInstance;
class PluginConsole;

class Plugin : public std::enable_shared_from_this<Plugin> {
 public:
  // services must live as long as the process: the plugin may keep its host table.
  Plugin(Manifest manifest, sdk::abi::ProviderClient client, HostServices* services);
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const Manifest& manifest() const { return manifest_; }
  const sdk::abi::ProviderClient& client() const { return client_; }
  HostServices& services() const { return *services_; }
  // Every call of this plugin and its instances, in flight (call_tracker.h). Replace it before
  // the first call.
  CallTracker& calls() const { return *calls_; }
  void trackCallsWith(std::shared_ptr<CallTracker> tracker) { calls_ = std::move(tracker); }

  CallResult describe(const CallOptions& options = {}) const;
  // request: {"operation": CREATE|UPDATE|DELETE, "object", "oldObject"?}.
  CallResult validate(std::string_view kind, std::string_view request,
                      const CallOptions& options = {}) const;
  // On success the instance is returned (it keeps the plugin alive); on failure `result`
  // explains why. Creation and destruction are serialized per plugin, as the ABI promises.
  std::unique_ptr<PluginInstance> createInstance(std::string_view config,
                                                 const CallOptions& options,
                                                 CallResult& result) const;

 private:
  friend class PluginInstance;
  class PluginConsole;
  template <class Fn>
  CallResult run(const char* slot, const CallOptions& options, Fn&& fn) const;

  Manifest manifest_;
  sdk::abi::ProviderClient client_;
  HostServices* services_;
  std::shared_ptr<CallTracker> calls_ = std::make_shared<CallTracker>();
  mutable std::mutex serialized_;  // instance_create / instance_destroy
};

// One backend connection; destroyed through the plugin's instance_destroy.
class PluginInstance {
 public:
  PluginInstance(std::shared_ptr<const Plugin> plugin, banlieue_instance* handle)
      : plugin_(std::move(plugin)), handle_(handle) {}
  ~PluginInstance();
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  // request: {"provider": <Provider>, "operation"?: {"token"}}.
  CallResult introspect(std::string_view request, const CallOptions& options = {}) const;
  CallResult reconcile(std::string_view kind, std::string_view request,
                       const CallOptions& options = {}) const;
  CallResult finalize(std::string_view kind, std::string_view request,
                      const CallOptions& options = {}) const;
  CallResult importImage(std::string_view request, const CallOptions& options = {}) const;
  // SINCE 1.1; a 1.0 plugin answers UNIMPLEMENTED, reason NotSupportedByBackend.
  CallResult deleteImage(std::string_view request, const CallOptions& options = {}) const;
  // SINCE 1.2; a 1.0 or 1.1 plugin answers UNIMPLEMENTED, reason NotSupportedByBackend.
  // options.object_uid is the machine's uid (snapshot calls never overlap its reconcile).
  CallResult snapshot(std::string_view request, const CallOptions& options = {}) const;
  // SINCE 1.4; an older plugin, or one that leaves the slot NULL, answers UNIMPLEMENTED, reason
  // NotSupportedByBackend. A long poll: answers when a machine changed or near its deadline.
  CallResult watchChanges(std::string_view request, const CallOptions& options = {}) const;
  // SINCE 1.3; an older plugin, or one without all four console slots, answers UNIMPLEMENTED,
  // reason NotSupportedByBackend. On OK `out` is the open console, which must go before this
  // instance does; for a ticket console ("console": "webmks") `out` stays empty and the
  // reply's status.url is the answer (OK without a console is a violation for any other kind,
  // or without a url). options.object_uid is the machine's uid; the timeout bounds the opening
  // only.
  CallResult openConsole(std::string_view request, std::unique_ptr<PluginConsole>& out,
                         const CallOptions& options = {}) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  banlieue_instance* handle_;
};

// What one console_read or console_write did.
struct ConsoleIo {
  banlieue_status code = BANLIEUE_OK;  // OUT_OF_RANGE once the stream has ended
  std::string data;                    // read: the bytes that came (none when the wait ran out)
  size_t written = 0;                  // write: the bytes the plugin took
  std::string violation;               // a contract breach, already corrected

  bool ok() const { return code == BANLIEUE_OK; }
  bool ended() const { return code == BANLIEUE_OUT_OF_RANGE; }
};

// One open console (SINCE 1.3), closed through the plugin's console_close when it goes. One
// thread may read while another writes; each is serialized with itself here.
class PluginConsole {
 public:
  PluginConsole(std::shared_ptr<const Plugin> plugin, banlieue_console* handle)
      : plugin_(std::move(plugin)), handle_(handle) {}
  ~PluginConsole();
  PluginConsole(const PluginConsole&) = delete;
  PluginConsole& operator=(const PluginConsole&) = delete;

  // Up to `max` bytes of output, waiting at most `timeout` for the first.
  ConsoleIo read(size_t max, std::chrono::milliseconds timeout) const;
  // All of `data`, written as the plugin takes it; stops at the first error or the end.
  ConsoleIo write(std::string_view data) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  banlieue_console* handle_;
  mutable std::mutex reading_;
  mutable std::mutex writing_;
};

}  // namespace banlieue::plugin
