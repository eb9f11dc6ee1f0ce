// Which Provider a VirtualMachineSnapshot or VirtualMachineRestore belongs to, decided from the
// objects it names (docs/adr/0039-snapshots.md). Pure: the controller applies the answer (the
// banlieue.io/provider label, status.machineRef, or a condition saying why not yet) and the
// provider reads the same fields back.
#pragma once

#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <optional>
#include <string>

namespace banlieue::roles {

inline const kube::ResourceType kVirtualMachineSnapshotType{"banlieue.io", "v1alpha1",
                                                            "virtualmachinesnapshots", true};
inline const kube::ResourceType kVirtualMachineRestoreType{"banlieue.io", "v1alpha1",
                                                           "virtualmachinerestores", true};

// The label the controller sets on a snapshot or restore: the Provider that serves its machine
// (the label infrastructure objects carry), so each Provider watches only its own.
inline constexpr const char* kSnapshotProviderLabel = "banlieue.io/provider";

// The machine a snapshot is of, as status.machineRef stores it.
struct SnapshotMachine {
  std::string api_group;
  std::string kind;
  std::string name;
  std::string provider;
  bool operator==(const SnapshotMachine&) const = default;
};

// Either where the object goes, or why it cannot go anywhere yet (a condition reason and
// message; `retry` when the answer may change without the object changing, e.g. the VM is
// still being placed).
struct SnapshotBinding {
  std::optional<SnapshotMachine> machine;
  std::string reason;
  std::string message;
  bool retry = false;
};

// status.machineRef of a snapshot, when bound.
std::optional<SnapshotMachine> boundMachine(const rapidjson::Value& snapshot);

// A snapshot binds once, to the machine its VM runs on when first seen with one; `vm` is the
// VirtualMachine it names, or null when there is none.
SnapshotBinding bindSnapshot(const rapidjson::Value& snapshot, const rapidjson::Value* vm);

// A restore goes where its snapshot is; `snapshot` is the VirtualMachineSnapshot it names, or
// null when there is none.
SnapshotBinding bindRestore(const rapidjson::Value& restore, const rapidjson::Value* snapshot);

// The backend-side snapshot name for a VirtualMachineSnapshot: stable across restarts (its
// create's idempotency key), unique per object (the uid's first 8 hex digits), and within what
// every in-tree backend accepts: a letter first, then letters, digits and '-', at most 40
// characters (Proxmox VE's limit, the tightest).
std::string backendSnapshotName(const std::string& name, const std::string& uid);

}  // namespace banlieue::roles
