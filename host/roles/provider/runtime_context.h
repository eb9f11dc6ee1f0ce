// What the provider process's reconcilers share: who they are (backend, Provider), how they
// write (field manager, finalizer), the plugin session and the event recorder.
#pragma once

#include "host/kube/client.h"
#include "host/roles/provider/plugin_session.h"
#include "host/runtime/events.h"

#include <atomic>
#include <chrono>
#include <string>

namespace banlieue::roles::provider {

struct RuntimeContext {
  kube::KubeClient& client;
  runtime::EventRecorder& events;
  PluginSession& session;
  std::string backend;  // the plugin's name, e.g. libvirt
  std::string provider_namespace;
  std::string provider_name;
  const std::atomic<bool>& stopping;
  std::chrono::milliseconds call_timeout{std::chrono::seconds(30)};

  // banlieue.io/provider-<backend>: the field manager of every write and the infra finalizer.
  std::string fieldManager() const { return "banlieue.io/provider-" + backend; }
  std::string finalizer() const { return "banlieue.io/provider-" + backend; }
  plugin::CallOptions callOptions(const std::string& object_uid) const {
    plugin::CallOptions options;
    options.timeout = call_timeout;
    options.object_uid = object_uid;
    options.cancel = &stopping;
    return options;
  }
};

}  // namespace banlieue::roles::provider
