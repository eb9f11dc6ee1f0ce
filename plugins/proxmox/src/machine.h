// ProxmoxMachine lifecycle: clone from the template VMID onto the node, apply the config
// (cores, memory, disks, NICs, cloud-init drive with the userData snippet), start, and
// converge power; finalize stops, removes the snippet and destroys with purge. Every PVE task is a
// UPID carried as the operationToken
// ("<phase>:<UPID>"), so a call never blocks on a task and a retry never starts one twice.
#pragma once

#include "plugins/proxmox/src/node_files.h"
#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/provider.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

// What one reconcile pass that answers OK found and did, as far as its reply's "settled" goes.
struct PassSummary {
  bool carried_token = false;     // the request carried an operation token (a task it ended)
  bool changed_config = false;    // this pass changed the guest's config, disk or userData
  bool pending_config = false;    // PVE holds config changes for the next boot
  bool power_as_desired = false;  // the guest is in the spec's power state
  bool powered_on = false;
  bool agent_answered = false;  // the QEMU guest agent answered through PVE
  bool has_addresses = false;
};
// Whether the reply may say the machine is settled (docs/provider-contract.md, "Settled
// replies"). Proxmox carries every multi-pass change (clone, power, reboot, resize at boot) in
// the operation token or in PVE's pending config, so: not in the pass that saw a task end or
// changed anything (the next one confirms), not while changes wait for a boot (whatever the
// resizePolicy), and not while a running guest's agent and addresses are unknown.
bool atRest(const PassSummary& pass);

// The tag that ties a guest to its object (PVE tags allow [a-z0-9_+.-]).
std::string ownerTag(const std::string& uid);
// Whether a guest's `tags` (PVE's list, ';' or ',' separated) carry ownerTag(uid).
bool taggedFor(const std::string& tags, const std::string& uid);

// Every guest and template of the cluster (/cluster/resources?type=vm). Anything but a list is
// an error (sdk::Error UNAVAILABLE/MalformedReply), never read as "no guests".
rapidjson::Document listGuests(const PveClient& client, Deadline deadline);

// A machine's providerID: proxmox://<node>/<vmid>, the node it was provisioned on.
struct GuestRef {
  std::string node;
  int64_t vmid = 0;
};
std::string providerId(const std::string& node, int64_t vmid);
std::optional<GuestRef> parseProviderId(std::string_view provider_id);

}  // namespace banlieue::proxmox
