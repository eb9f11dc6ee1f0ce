// The snapshot slot (ABI 1.2, docs/adr/0038) for VSphereMachines: vSphere's own snapshot tree
// of the VM the machine's providerID names. create is CreateSnapshot_Task, idempotent by name
// (the tree is searched first, so a create whose reply was lost answers the snapshot it made);
// revert is RevertToSnapshot_Task, delete RemoveSnapshot_Task (the snapshot alone: its
// children stay). Tasks are polled by their operation token like every task of this plugin.
#pragma once

#include "plugins/vsphere/src/vim.h"

#include <banlieue/sdk/provider.h>

#include <string>
#include <vector>

namespace banlieue::vsphere {

// One VirtualMachineSnapshotTree node.
struct SnapshotNode {
  MoRef ref;
  std::string name;
  std::string created_at;  // createTime: xsd:dateTime with a zone, which is RFC 3339
  // Whether the snapshot holds the VM's memory: its `state` (the power state a revert brings
  // the VM back to) is poweredOn or suspended. vSphere records poweredOff for a snapshot taken
  // without memory, even of a running VM, so the state says what a revert restores; the tree
  // has no other field for it (layoutEx's memoryKey is -1 when vSphere stores the memory in
  // the .vmsn). vcsim records the VM's power state whatever `memory` was.
  bool memory = false;
  bool current = false;
};

// The VM's `snapshot` property (VirtualMachineSnapshotInfo), flattened parents first; empty
// when the VM has none (the property is unset). Exposed for the unit tests.
std::vector<SnapshotNode> parseSnapshotInfo(const pugi::xml_node& info);

class SnapshotManager {
 public:
  explicit SnapshotManager(Vim& vim) : vim_(vim) {}

  sdk::Status handle(const sdk::Call& call, const sdk::SnapshotRequest& request, sdk::Reply& reply);

 private:
  Vim& vim_;
};

}  // namespace banlieue::vsphere
