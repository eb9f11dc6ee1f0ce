// The one plugin instance a provider process holds for its Provider, re-created when the
// connection inputs change (credential rotation without a restart). Callers take a shared
// reference for the duration of a call, so a replaced instance is destroyed only after the
// calls still running on it return — the ABI forbids destroying an instance mid-call.
#pragma once

#include "host/common/status_or.h"
#include "host/plugin/plugin.h"
#include "host/roles/provider/connection_inputs.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace banlieue::roles::provider {

// A plugin call's outcome as a Status: the plugin's code, reason and message.
Status statusOf(const plugin::CallResult& result);

class PluginSession {
 public:
  explicit PluginSession(std::shared_ptr<plugin::Plugin> plugin) : plugin_(std::move(plugin)) {}

  // Makes sure an instance exists for these inputs: none yet, or different inputs, creates
  // one (destroying the old when its last call returns). A failure leaves no instance, so
  // nothing runs against a backend with stale credentials.
  Status connect(const ConnectionInputs& inputs, const plugin::CallOptions& options);
  // The current instance, or null when not connected.
  std::shared_ptr<plugin::PluginInstance> instance() const;
  void disconnect();
  // Increments each time an instance is created (tests and metrics watch rotation with it).
  int generation() const;
  // Called (on the connecting thread, no lock held) when an instance is created where there
  // was none, so that work waiting for the backend resumes at once rather than at its next
  // poll. Set before the workers start.
  void onConnected(std::function<void()> listener) { on_connected_ = std::move(listener); }

  const plugin::Plugin& plugin() const { return *plugin_; }

 private:
  std::shared_ptr<plugin::Plugin> plugin_;
  mutable std::mutex mu_;
  std::shared_ptr<plugin::PluginInstance> instance_;
  std::string fingerprint_;
  int generation_ = 0;
  std::function<void()> on_connected_;
};

}  // namespace banlieue::roles::provider
