#include "host/api/snapshot.h"

#include "host/api/declare.h"
#include "host/api/kinds.h"

namespace banlieue::api {

const Fields<VirtualMachineSnapshotSpec>& VirtualMachineSnapshotSpec::describe() {
  using T = VirtualMachineSnapshotSpec;
  static const Fields<T> f =
      Fields<T>("A point-in-time copy of one VirtualMachine's disks (and, on request, memory)")
          .field("virtualMachineName", &T::virtual_machine_name,
                 {.description = "The VirtualMachine in this namespace to snapshot; read once",
                  .required = true,
                  .min_length = 1})
          .field("memory", &T::memory,
                 {.description = "Also keep a running machine's memory, where the backend can"})
          .field("description", &T::description,
                 {.description = "Free text the backend stores with the snapshot",
                  .max_length = 1024});
  return f;
}

const Fields<SnapshotMachineRef>& SnapshotMachineRef::describe() {
  using T = SnapshotMachineRef;
  static const Fields<T> f =
      Fields<T>("The infrastructure machine the snapshot was taken of, bound once")
          .field("apiGroup", &T::api_group, {.description = "The machine's API group"})
          .field("kind", &T::kind, {.description = "The machine's kind, e.g. LibvirtMachine"})
          .field("name", &T::name, {.description = "The machine's name (the VM's)"})
          .field("providerName", &T::provider_name,
                 {.description = "The Provider that serves the machine"});
  return f;
}

const Fields<VirtualMachineSnapshotStatus>& VirtualMachineSnapshotStatus::describe() {
  using T = VirtualMachineSnapshotStatus;
  static const Fields<T> f =
      Fields<T>("The snapshot as the backend holds it")
          .field("machineRef", &T::machine_ref,
                 {.description = "The machine the snapshot belongs to (written by the "
                                 "controller)"})
          .field("snapshotRef", &T::snapshot_ref,
                 {.description = "The backend's id of the snapshot"})
          .field("createdAt", &T::created_at,
                 {.description = "When the backend took it (RFC 3339)"})
          .field("memory", &T::memory, {.description = "Whether it holds the machine's memory"})
          .field("operationToken", &T::operation_token,
                 {.description = "The backend task in progress, resumed after a restart"})
          .field("conditions", &T::conditions, conditionsSpec("Ready: the snapshot exists"))
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

const Fields<VirtualMachineRestoreSpec>& VirtualMachineRestoreSpec::describe() {
  using T = VirtualMachineRestoreSpec;
  static const Fields<T> f =
      Fields<T>("Bring a VirtualMachine's machine back to one of its snapshots, once")
          .field("virtualMachineName", &T::virtual_machine_name,
                 {.description = "The VirtualMachine in this namespace to restore",
                  .required = true,
                  .min_length = 1})
          .field("snapshotName", &T::snapshot_name,
                 {.description = "The VirtualMachineSnapshot in this namespace to restore to",
                  .required = true,
                  .min_length = 1});
  return f;
}

const Fields<VirtualMachineRestoreStatus>& VirtualMachineRestoreStatus::describe() {
  using T = VirtualMachineRestoreStatus;
  static const Fields<T> f =
      Fields<T>("The restore as performed")
          .field("restoredAt", &T::restored_at,
                 {.description = "When the backend finished the revert (RFC 3339)"})
          .field("operationToken", &T::operation_token,
                 {.description = "The backend task in progress, resumed after a restart"})
          .field("conditions", &T::conditions,
                 conditionsSpec("Complete: the machine is at the snapshot"))
          .field("observedGeneration", &T::observed_generation,
                 {.description = "metadata.generation this status was computed from"});
  return f;
}

BANLIEUE_API_CODEC(VirtualMachineSnapshot);
BANLIEUE_API_CODEC(VirtualMachineRestore);

std::vector<KindInfo> snapshotKinds() {
  KindInfo snapshot{
      .group = kGroup,
      .version = kVersion,
      .kind = "VirtualMachineSnapshot",
      .plural = "virtualmachinesnapshots",
      .short_names = {"bvmsnap"},
      .description = "A point-in-time copy of a VirtualMachine's machine on its backend",
      .columns = {{"VM", "string", ".spec.virtualMachineName", "The VirtualMachine"},
                  {"Provider", "string", ".status.machineRef.providerName",
                   "Provider that holds the snapshot"},
                  readyColumn(),
                  reasonColumn(),
                  {"Created", "string", ".status.createdAt", "When the backend took it"},
                  ageColumn()},
      .spec_schema = &schemaOf<VirtualMachineSnapshotSpec>,
      .status_schema = &schemaOf<VirtualMachineSnapshotStatus>,
      .spec_required = true};
  KindInfo restore{
      .group = kGroup,
      .version = kVersion,
      .kind = "VirtualMachineRestore",
      .plural = "virtualmachinerestores",
      .short_names = {"bvmrestore"},
      .description = "Brings a VirtualMachine's machine back to one of its snapshots",
      .columns = {{"VM", "string", ".spec.virtualMachineName", "The VirtualMachine"},
                  {"Snapshot", "string", ".spec.snapshotName", "The VirtualMachineSnapshot"},
                  {"Complete", "string", ".status.conditions[?(@.type==\"Complete\")].status",
                   "Whether the machine is at the snapshot"},
                  {"Reason", "string", ".status.conditions[?(@.type==\"Complete\")].reason",
                   "Why the restore is or is not complete"},
                  ageColumn()},
      .spec_schema = &schemaOf<VirtualMachineRestoreSpec>,
      .status_schema = &schemaOf<VirtualMachineRestoreStatus>,
      .spec_required = true};
  return {snapshot, restore};
}

}  // namespace banlieue::api
