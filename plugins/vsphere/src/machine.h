// VSphereMachine reconcile and finalize, one bounded step per call. A backend Task outlives
// the call: its moref becomes the operation token ("<phase>:<task>") and the next call polls
// it. The VM is found by its instance UUID, which the plugin sets at clone time to the
// VSphereMachine's metadata.uid, so a retry after a lost status write finds the VM instead of
// cloning a second one.
#pragma once

#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/provider.h>

#include <optional>
#include <string>
#include <string_view>

namespace banlieue::vsphere {

struct MachineSpec;

// A VSphereMachine's providerID names its VM by instance UUID: reconcile reports it, and the
// slots that act on the machine's VM later (snapshot) find the VM through it.
std::string providerIdOf(const std::string& instance_uuid);
// The instance UUID (lower case) a providerID names; nullopt for one this plugin never wrote.
std::optional<std::string> instanceUuidOf(std::string_view provider_id);

// What one reconcile pass that answers OK found, as far as its reply's "settled" goes.
struct PassSummary {
  bool carried_token = false;     // the request carried an operation token (a task it ended)
  bool power_as_desired = false;  // the VM is in the spec's power state
  bool hardware_held = false;     // the running VM lacks the spec's CPUs or memory (WaitForRestart)
  bool powered_on = false;
  bool tools_running = false;  // VMware Tools run in the guest
  bool has_addresses = false;
};
// Whether the reply may say the machine is settled (docs/provider-contract.md, "Settled
// replies"): not in the pass that saw a task end (the next one confirms), not while a resize
// waits for a restart, and not while a running guest's Tools and addresses are unknown
// (another call could report them).
bool atRest(const PassSummary& pass);

class MachineReconciler {
 public:
  explicit MachineReconciler(Vim& vim) : vim_(vim) {}

  sdk::Status reconcile(const sdk::Call& call, const sdk::ReconcileRequest& request,
                        sdk::Reply& reply);
  sdk::Status finalize(const sdk::Call& call, const sdk::ReconcileRequest& request,
                       sdk::Reply& reply);

 private:
  sdk::Status clone(const MachineSpec& spec, const sdk::ReconcileRequest& request,
                    const std::string& uuid, Deadline deadline, sdk::Reply& reply);

  Vim& vim_;
};

}  // namespace banlieue::vsphere
