// The controller's moving parts wired together: informers for VirtualMachines, VMClasses,
// VMImages, Providers and ProviderClasses, the infra kinds learnt at run time, and the
// VirtualMachine controller with the watches that requeue the right VMs (a class or image by
// name, a Provider's namespace, a ProviderClass's VMs, an infra CR's owner). The role adds
// leader election and endpoints around it; tests run it directly.
#pragma once

#include "host/kube/client.h"
#include "host/roles/common/snapshot_binding.h"
#include "host/roles/controller/capi_adopter.h"
#include "host/roles/controller/claim_reconciler.h"
#include "host/roles/controller/class_status.h"
#include "host/roles/controller/cluster_aggregate.h"
#include "host/roles/controller/image_ready.h"
#include "host/roles/controller/infra_kinds.h"
#include "host/roles/controller/pool_reconciler.h"
#include "host/roles/controller/snapshot_binder.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/runtime/cache_metrics.h"
#include "host/runtime/controller.h"
#include "host/runtime/events.h"
#include "host/runtime/informer.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace banlieue::controller {

struct ManagerOptions {
  int workers = 2;
  // Empty: every namespace. Otherwise only VMs, Providers, pools, infra CRs and clusters of
  // this namespace, and only VMImages whose rows all come from it (the aggregate needs them all).
  std::string ns;
  std::string event_instance;  // reportingInstance of events; empty: no events
};

class Manager {
 public:
  Manager(kube::KubeClient& client, ManagerOptions options);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Starts the informers and, once they are synced, the workers; returns after `stop` is set
  // and everything it started has ended.
  void run(const std::atomic<bool>& stop);
  bool synced() const;
  runtime::ControllerStats stats() const { return controller_->stats(); }
  runtime::Controller& controller() { return *controller_; }
  runtime::Controller& imageController() { return *image_controller_; }
  runtime::Controller& poolController() { return *pool_controller_; }
  runtime::Controller& claimController() { return *claim_controller_; }
  CapiAdoption* capiAdoption() { return capi_.get(); }

 private:
  kube::KubeClient& client_;
  ManagerOptions options_;
  std::unique_ptr<runtime::Informer> vms_, classes_, images_, providers_, provider_classes_;
  // banlieue_virtual_machines{phase} and banlieue_providers{phase}, from the caches above.
  MetricsCollector vm_phases_, provider_phases_;
  std::unique_ptr<runtime::EventRecorder> events_;
  std::unique_ptr<InfraKinds> infra_;
  std::unique_ptr<VmReconciler> reconciler_;
  std::unique_ptr<runtime::Controller> controller_;
  std::unique_ptr<ImageReconciler> image_reconciler_;
  std::unique_ptr<runtime::Controller> image_controller_;
  // Cluster-wide controllers only (class_status.h).
  std::unique_ptr<ClassStatusReconciler> class_reconciler_;
  std::unique_ptr<runtime::Controller> class_controller_;
  std::unique_ptr<runtime::Informer> pools_;
  std::unique_ptr<PoolReconciler> pool_reconciler_;
  std::unique_ptr<runtime::Controller> pool_controller_;
  std::unique_ptr<runtime::Informer> claims_;
  std::unique_ptr<ClaimReconciler> claim_reconciler_;
  std::unique_ptr<runtime::Controller> claim_controller_;
  // One per InfraCluster kind the API server serves (VSphereCluster, LibvirtCluster,
  // ProxmoxCluster: their CRDs may not all be installed).
  struct ClusterAggregation {
    std::string kind;
    std::unique_ptr<runtime::Informer> clusters;
    std::unique_ptr<ClusterReconciler> reconciler;
    std::unique_ptr<runtime::Controller> controller;
  };
  std::vector<ClusterAggregation> clusters_;
  // VirtualMachineSnapshots and VirtualMachineRestores, bound to their Provider.
  std::unique_ptr<runtime::Informer> snapshots_, restores_;
  std::unique_ptr<SnapshotBinder> snapshot_binder_, restore_binder_;
  std::unique_ptr<runtime::Controller> snapshot_controller_, restore_controller_;
  // Cluster API's machines made from banlieue's templates (docs/adr/0050); null when Cluster
  // API is not installed.
  std::unique_ptr<CapiAdoption> capi_;
  void setUpClusters();
  void setUpSnapshots();
  void setUpClaims();
};

}  // namespace banlieue::controller
