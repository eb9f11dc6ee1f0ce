#include "host/roles/provider/plugin_session.h"

#include "host/common/logging.h"

namespace banlieue::roles::provider {

Status statusOf(const plugin::CallResult& result) {
  const auto& o = result.outcome;
  if (o.ok()) return Status::ok();
  return Status(static_cast<Code>(o.code), o.reason.empty() ? o.codeName() : o.reason, o.message);
}

Status PluginSession::connect(const ConnectionInputs& inputs, const plugin::CallOptions& options) {
  {
    std::lock_guard lock(mu_);
    if (instance_ && fingerprint_ == inputs.fingerprint) return Status::ok();
  }
  // Created outside the lock: instance_create may log in to a slow backend, and calls on the
  // old instance go on meanwhile.
  plugin::CallResult result;
  std::unique_ptr<plugin::PluginInstance> created =
      plugin_->createInstance(inputs.config_json, options, result);
  std::shared_ptr<plugin::PluginInstance> old;
  {
    std::lock_guard lock(mu_);
    old = std::move(instance_);
    if (!created) {
      fingerprint_.clear();
      return statusOf(result);
    }
    if (old) {
      common::logger("provider")
          ->info(
              "connection settings or credentials changed: plugin "
              "instance re-created");
    }
    instance_ = std::move(created);
    fingerprint_ = inputs.fingerprint;
    ++generation_;
  }
  // A rotation (an instance replaced by another) leaves nothing waiting: no mass re-queue.
  if (!old && on_connected_) on_connected_();
  return Status::ok();
}

std::shared_ptr<plugin::PluginInstance> PluginSession::instance() const {
  std::lock_guard lock(mu_);
  return instance_;
}

void PluginSession::disconnect() {
  std::shared_ptr<plugin::PluginInstance> old;
  std::lock_guard lock(mu_);
  old = std::move(instance_);
  fingerprint_.clear();
}

int PluginSession::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

}  // namespace banlieue::roles::provider
