// The snapshot slot (ABI 1.2, docs/adr/0038) for ProxmoxMachines: PVE's own snapshots of the
// guest the machine's providerID names (/nodes/{node}/qemu/{vmid}/snapshot). create is a
// qmsnapshot task, idempotent by name (the guest's snapshots are listed first, so a create
// whose reply was lost answers the snapshot it made); revert is a qmrollback task, delete a
// qmdelsnapshot task (the snapshot alone: PVE hands its parent to its children). Every task is
// polled by its UPID in the operation token, like the machine's own tasks.
#pragma once

#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/provider.h>

#include <string>
#include <string_view>

namespace banlieue::proxmox {

// The PVE snapname for a snapshot's backend-side name (the request's snapshot.name). PVE takes
// only a pve-configid ([A-Za-z][A-Za-z0-9_-]+) of at most 40 characters, and reserves
// "current" for the running state. A name PVE takes as it is stays itself, so a user sees the
// same name in PVE's GUI. Any other name becomes its readable part (each run of other
// characters one '-', a leading 's' when it does not start with a letter, cut to 31
// characters) followed by '-' and the first 8 hex digits of the sha256 of the whole name: the
// same name always maps to the same snapname, which is what makes create idempotent, and two
// names that differ only in what the mapping drops still map apart. Every name maps: the
// mapping never fails.
std::string pveSnapshotName(std::string_view name);

class SnapshotManager {
 public:
  explicit SnapshotManager(const PveClient& client) : client_(client) {}

  sdk::Status handle(const sdk::Call& call, const sdk::SnapshotRequest& request, sdk::Reply& reply);

 private:
  const PveClient& client_;
};

}  // namespace banlieue::proxmox
