// VSphereMachine reconcile and finalize, one bounded step per call. A backend Task outlives
// the call: its moref becomes the operation token ("<phase>:<task>") and the next call polls
// it. The VM is found by its instance UUID, which the plugin sets at clone time to the
// VSphereMachine's metadata.uid, so a retry after a lost status write finds the VM instead of
// cloning a second one.
#pragma once

#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/provider.h>

namespace banlieue::vsphere {

struct MachineSpec;

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
