// Binds each VirtualMachineSnapshot and VirtualMachineRestore to the Provider that serves its
// machine (roles/common/snapshot_binding.h): the banlieue.io/provider label, which that
// Provider's snapshot controller selects on, and for a snapshot status.machineRef, written once.
// Until it can bind, the object's condition (Ready for a snapshot, Complete for a restore) says
// why, and a change to the VirtualMachine or snapshot it names brings it back.
#pragma once

#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

namespace banlieue::controller {

class SnapshotBinder final : public runtime::Reconciler {
 public:
  enum class Kind { kSnapshot, kRestore };
  // `named` holds what the objects name: VirtualMachines for snapshots, snapshots for restores.
  SnapshotBinder(kube::KubeClient& client, Kind kind, runtime::Informer& objects,
                 runtime::Informer& named)
      : client_(client), kind_(kind), objects_(objects), named_(named) {}
  runtime::Result reconcile(const runtime::Request& request) override;

  // The keys of the objects that name `target` (a VirtualMachine or a snapshot), for
  // Controller::watchMapped.
  std::vector<std::string> namingKeys(const runtime::Object& target) const;

 private:
  Status applyStatus(const rapidjson::Value& object, const rapidjson::Value& status);

  kube::KubeClient& client_;
  Kind kind_;
  runtime::Informer& objects_;
  runtime::Informer& named_;
};

}  // namespace banlieue::controller
