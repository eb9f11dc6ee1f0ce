// The Provider's side of VirtualMachineSnapshot and VirtualMachineRestore (docs/adr/0039): the
// objects the controller bound to this Provider (label banlieue.io/provider) are made real
// through the plugin's snapshot slot (ABI 1.2) on the machine they name.
//  - A snapshot gets this Provider's finalizer before its create, keeps the running task in
//    status.operationToken (a restarted provider resumes it; create is idempotent by the
//    backend-side name besides), and once made answers from its status with no backend call.
//    Deleted, it is removed from the backend first; when its machine is gone its snapshots went
//    with it.
//  - A restore reverts the machine once, records when, and wakes the machine's reconcile so the
//    power state comes back to the spec.
// Each call holds the machine's lock (machine_locks.h): never beside its reconcile or finalize.
#pragma once

#include "host/roles/provider/runtime_context.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <functional>
#include <optional>
#include <string>

namespace banlieue::roles::provider {

// The machines this Provider serves, by kind and "namespace/name"; and a way to wake one, whose
// next pass then calls the plugin even if its last reply said it was settled.
struct MachineDirectory {
  std::function<runtime::Object(const std::string& kind, const std::string& key)> find;
  std::function<void(const std::string& kind, const std::string& key)> wake;
};

class SnapshotReconciler final : public runtime::Reconciler {
 public:
  SnapshotReconciler(RuntimeContext& context, runtime::Informer& snapshots,
                     MachineDirectory machines)
      : context_(context), snapshots_(snapshots), machines_(std::move(machines)) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  runtime::Result finalize(const rapidjson::Value& snapshot, const runtime::Object& machine);

  RuntimeContext& context_;
  runtime::Informer& snapshots_;
  MachineDirectory machines_;
};

class RestoreReconciler final : public runtime::Reconciler {
 public:
  RestoreReconciler(RuntimeContext& context, runtime::Informer& restores,
                    runtime::Informer& snapshots, MachineDirectory machines)
      : context_(context),
        restores_(restores),
        snapshots_(snapshots),
        machines_(std::move(machines)) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  RuntimeContext& context_;
  runtime::Informer& restores_;
  runtime::Informer& snapshots_;
  MachineDirectory machines_;
};

}  // namespace banlieue::roles::provider
