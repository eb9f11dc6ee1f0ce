// What the provider process's reconcilers share: who they are (backend, Provider), how they
// write (field manager, finalizer), the plugin session and the event recorder.
#pragma once

#include "host/kube/client.h"
#include "host/roles/provider/crash_quarantine.h"
#include "host/roles/provider/create_slots.h"
#include "host/roles/provider/machine_locks.h"
#include "host/roles/provider/plugin_session.h"
#include "host/runtime/events.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace banlieue::roles::provider {

// banlieue.io/provider-<backend>: the field manager of every write a provider makes and the
// finalizer it puts on infrastructure objects.
inline std::string providerFieldManager(const std::string& backend) {
  return "banlieue.io/provider-" + backend;
}

struct RuntimeContext {
  kube::KubeClient& client;
  runtime::EventRecorder& events;
  PluginSession& session;
  std::string backend;  // the plugin's name, e.g. libvirt
  std::string provider_namespace;
  std::string provider_name;
  const std::atomic<bool>& stopping;
  std::chrono::milliseconds call_timeout{std::chrono::seconds(30)};
  // Objects the previous process died on, kept from the plugin for a while; optional.
  CrashQuarantine* quarantine = nullptr;
  // One plugin call per machine uid across controllers (machine_locks.h); optional.
  MachineLocks* machine_locks = nullptr;
  // The Provider's create slots (create_slots.h), shared by every kind; optional (no limit).
  CreateSlots* create_slots = nullptr;

  std::optional<MachineLocks::Guard> lockMachine(const std::string& uid) const {
    if (machine_locks == nullptr || uid.empty()) return std::nullopt;
    return machine_locks->lock(uid);
  }

  std::string fieldManager() const { return providerFieldManager(backend); }
  // The same name: published on the class (status.plugin.machineFinalizer), so the controller
  // creates infra objects carrying it (docs/adr/0056).
  std::string finalizer() const { return providerFieldManager(backend); }
  // `object` ("Kind ns/name") names the call in the stuck-call liveness check and the journal,
  // which also keeps its generation (a quarantine lifts when it moves).
  plugin::CallOptions callOptions(const std::string& object_uid, const std::string& object = {},
                                  int64_t generation = 0) const {
    plugin::CallOptions options;
    options.timeout = call_timeout;
    options.object_uid = object_uid;
    options.object = object;
    options.object_generation = generation;
    options.cancel = &stopping;
    return options;
  }
};

}  // namespace banlieue::roles::provider
