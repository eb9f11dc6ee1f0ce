// One bounded, idempotent step of a QemuMachine towards its spec (reconcile) or away from the
// backend (finalize). Every decision is taken from what the backend shows now (the machine's
// files, its pidfile checked against /proc, QMP), never from memory of an earlier call, so any
// instance in any process takes up where another left off.
#pragma once

#include <banlieue/sdk/provider.h>

#include <string>

#include "backend_config.h"

namespace qemu_provider {

class MachineReconciler {
 public:
  MachineReconciler(BackendConfig config, std::string host)
      : config_(std::move(config)), host_(std::move(host)) {}

  banlieue::sdk::Status reconcile(const banlieue::sdk::Call& call,
                                  const banlieue::sdk::ReconcileRequest& request,
                                  banlieue::sdk::Reply& reply) const;
  banlieue::sdk::Status finalize(const banlieue::sdk::Call& call,
                                 const banlieue::sdk::ReconcileRequest& request,
                                 banlieue::sdk::Reply& reply) const;

  const BackendConfig& config() const { return config_; }
  const std::string& host() const { return host_; }

 private:
  BackendConfig config_;
  std::string host_;  // the host part of every providerID
};

}  // namespace qemu_provider
