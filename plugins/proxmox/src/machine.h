// ProxmoxMachine lifecycle: clone from the template VMID onto the node, apply the config
// (cores, memory, disks, NICs, cloud-init drive with the userData snippet), start, and
// converge power; finalize stops, removes the snippet and destroys with purge. Every PVE task is a
// UPID carried as the operationToken
// ("<phase>:<UPID>"), so a call never blocks on a task and a retry never starts one twice.
#pragma once

#include "plugins/proxmox/src/node_files.h"
#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/provider.h>

namespace banlieue::proxmox {

class MachineReconciler {
 public:
  // `files`: the SSH access that delivers userData as a cloud-init snippet.
  MachineReconciler(const PveClient& client, const NodeFiles& files)
      : client_(client), files_(files) {}

  sdk::Status reconcile(const sdk::Call& call, const sdk::ReconcileRequest& request,
                        sdk::Reply& reply);
  sdk::Status finalize(const sdk::Call& call, const sdk::ReconcileRequest& request,
                       sdk::Reply& reply);

 private:
  const PveClient& client_;
  const NodeFiles& files_;
};

// The tag that ties a guest to its object (PVE tags allow [a-z0-9_+.-]).
std::string ownerTag(const std::string& uid);

}  // namespace banlieue::proxmox
