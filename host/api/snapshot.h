// banlieue.io/v1alpha1 VirtualMachineSnapshot and VirtualMachineRestore: a point-in-time copy
// of one VirtualMachine's backend machine, and a request to bring the machine back to one
// (docs/adr/0039-snapshots.md). The controller binds a snapshot to the machine the VM runs on;
// the Provider serving that machine makes, reverts and removes it through the plugin's
// snapshot slot (ABI 1.2).
#pragma once

#include "host/api/common.h"

namespace banlieue::api {

struct VirtualMachineSnapshotSpec {
  std::string virtual_machine_name;
  bool memory = false;
  std::string description;
  static const Fields<VirtualMachineSnapshotSpec>& describe();
};

// The machine a snapshot was taken of: bound once, so a VM moved to another backend keeps its
// old snapshots pointing where they are.
struct SnapshotMachineRef {
  std::string api_group;
  std::string kind;
  std::string name;
  std::string provider_name;
  static const Fields<SnapshotMachineRef>& describe();
};

struct VirtualMachineSnapshotStatus {
  std::optional<SnapshotMachineRef> machine_ref;
  std::string snapshot_ref;  // the backend's id, as the plugin reported it
  std::string created_at;
  bool memory = false;
  std::string operation_token;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VirtualMachineSnapshotStatus>& describe();
};

using VirtualMachineSnapshot = Resource<VirtualMachineSnapshotSpec, VirtualMachineSnapshotStatus>;

struct VirtualMachineRestoreSpec {
  std::string virtual_machine_name;
  std::string snapshot_name;
  static const Fields<VirtualMachineRestoreSpec>& describe();
};

struct VirtualMachineRestoreStatus {
  std::string restored_at;  // when the backend finished the revert (RFC 3339)
  std::string operation_token;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<VirtualMachineRestoreStatus>& describe();
};

using VirtualMachineRestore = Resource<VirtualMachineRestoreSpec, VirtualMachineRestoreStatus>;

}  // namespace banlieue::api
