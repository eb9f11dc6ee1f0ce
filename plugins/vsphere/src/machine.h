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
