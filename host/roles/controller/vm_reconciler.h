// The VirtualMachine reconcile (docs/adr/0010): finalizer, class and image resolution,
// scheduling, the infra CR of the chosen Provider's kind, backend swap, power, status mirror
// and a delete that waits for every infra CR the VM owns. Level-triggered and write-avoiding:
// every write is preceded by a comparison with the cached object, so a converged VM costs no
// API writes however often it is reconciled.
#pragma once

#include "host/api/virtual_machine.h"
#include "host/kube/client.h"
#include "host/roles/controller/infra_kinds.h"
#include "host/roles/controller/scheduler.h"
#include "host/runtime/controller.h"
#include "host/runtime/events.h"
#include "host/runtime/informer.h"
#include "host/runtime/write_expectations.h"

#include <chrono>
#include <string>

namespace banlieue::controller {

inline constexpr const char* kVmFinalizer = "banlieue.io/virtualmachine";
inline constexpr const char* kMigrateAnnotation = "banlieue.io/migrate";

namespace resources {
inline const kube::ResourceType kVirtualMachine{"banlieue.io", "v1alpha1", "virtualmachines", true};
inline const kube::ResourceType kVMClass{"banlieue.io", "v1alpha1", "vmclasses", false};
inline const kube::ResourceType kVMImage{"banlieue.io", "v1alpha1", "vmimages", false};
inline const kube::ResourceType kProvider{"banlieue.io", "v1alpha1", "providers", true};
inline const kube::ResourceType kProviderClass{"banlieue.io", "v1alpha1", "providerclasses", false};
inline const kube::ResourceType kVirtualMachinePool{"banlieue.io", "v1alpha1",
                                                    "virtualmachinepools", true};
}  // namespace resources

struct VmCaches {
  runtime::Informer* vms = nullptr;
  runtime::Informer* classes = nullptr;
  runtime::Informer* images = nullptr;
  runtime::Informer* providers = nullptr;
  runtime::Informer* provider_classes = nullptr;
};

class VmReconciler final : public runtime::Reconciler {
 public:
  VmReconciler(kube::KubeClient& client, VmCaches caches, InfraKinds& infra,
               runtime::EventRecorder* events);

  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  struct Pass;
  runtime::Result finalize(Pass& pass);
  runtime::Result reconcilePlaced(Pass& pass, const Placement& placement);
  // Writes status when it differs from the cached object's (whole status, one field manager).
  Status writeStatus(Pass& pass);
  // A Normal Event when this pass's status write turned Ready to True.
  void announceReady(const Pass& pass);
  // Sets Scheduled=False and Ready=False with the same reason, then writes.
  runtime::Result refuse(Pass& pass, const std::string& reason, const std::string& message,
                         std::chrono::seconds requeue);
  // Why Provider `provider_name` cannot delete the VM's infra object now (absent, not Ready),
  // or empty.
  std::string providerCannotFinalize(const std::string& ns, const std::string& provider_name);
  // Writes the VM's rendered userData to its Secret unless that already holds it, and returns
  // the reference the infra object carries (docs/adr/0026). Reason UserDataSecretConflict when
  // a Secret of that name is not the VM's.
  StatusOr<UserDataReference> writeRenderedUserData(const Pass& pass, const std::string& text);
  // An object of the VM's name and infra kind that the VM does not own.
  runtime::Result refuseNameConflict(Pass& pass, const std::string& kind);
  // Server-side applies the VM's infra object. `creating` (none in the cache) applies without
  // force, so that an object of that name someone else wrote conflicts instead of being taken
  // over; only then is it read. Reason InfraNameConflict when the VM does not own it.
  StatusOr<rapidjson::Document> applyInfra(const Pass& pass, const InfraKind& kind,
                                           const rapidjson::Value& desired, bool creating);
  void warn(const Pass& pass, const std::string& reason, const std::string& action,
            const std::string& note);

  kube::KubeClient& client_;
  VmCaches caches_;
  InfraKinds& infra_;
  runtime::EventRecorder* events_;
  runtime::WriteExpectations expectations_;
};

}  // namespace banlieue::controller
