#include "host/roles/controller/manager.h"

#include "host/api/infra_cluster.h"
#include "host/api/kinds.h"
#include "host/common/logging.h"
#include "host/kube/discovery.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <cctype>
#include <thread>
#include <vector>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;

}  // namespace

Manager::Manager(kube::KubeClient& client, ManagerOptions options)
    : client_(client), options_(std::move(options)) {
  const runtime::InformerOptions scoped{.ns = options_.ns};
  vms_ = std::make_unique<runtime::Informer>(client_, resources::kVirtualMachine, scoped);
  vms_->addIndexer("class", [](const rapidjson::Value& vm) {
    return std::vector<std::string>{json::stringOr(&vm, "spec.classRef.name")};
  });
  vms_->addIndexer("image", [](const rapidjson::Value& vm) {
    return std::vector<std::string>{json::stringOr(&vm, "spec.imageRef.name")};
  });
  vms_->addIndexer("providerClass", [](const rapidjson::Value& vm) {
    return std::vector<std::string>{json::stringOr(&vm, "status.scheduled.providerClass")};
  });
  vms_->addIndexer(kPoolMemberIndex, poolOfMember);
  classes_ =
      std::make_unique<runtime::Informer>(client_, resources::kVMClass, runtime::InformerOptions{});
  images_ =
      std::make_unique<runtime::Informer>(client_, resources::kVMImage, runtime::InformerOptions{});
  providers_ = std::make_unique<runtime::Informer>(client_, resources::kProvider, scoped);
  provider_classes_ = std::make_unique<runtime::Informer>(client_, resources::kProviderClass,
                                                          runtime::InformerOptions{});
  // Counted here, once: the operator watches Providers too, but a second exporter would double
  // every sum over the cluster's scrapes.
  vm_phases_ =
      runtime::exportPhaseGauge(MetricsRegistry::global(), "banlieue_virtual_machines",
                                "VirtualMachines in this controller's cache, by phase", *vms_);
  provider_phases_ =
      runtime::exportPhaseGauge(MetricsRegistry::global(), "banlieue_providers",
                                "Providers in this controller's cache, by phase", *providers_);
  if (!options_.event_instance.empty()) {
    // One event writer per reconcile worker: each VM's Ready Event is one POST, and with
    // fewer writers the Events trailed convergence and overflowed the queue at 10,000 VMs
    // (issue #23: 4 writers dropped 4,400 of 10,000 once the provider wrote one write less).
    events_ = std::make_unique<runtime::EventRecorder>(
        client_,
        runtime::EventSource{.controller = "banlieue.io/controller",
                             .instance = options_.event_instance},
        runtime::SteadyClock::instance(), size_t{1000},
        static_cast<size_t>(std::max(1, options_.workers)));
  }
  infra_ = std::make_unique<InfraKinds>(client_, options_.ns, [this](runtime::Informer& informer) {
    controller_->watchOwned(informer, "VirtualMachine");
  });
  reconciler_ =
      std::make_unique<VmReconciler>(client_,
                                     VmCaches{.vms = vms_.get(),
                                              .classes = classes_.get(),
                                              .images = images_.get(),
                                              .providers = providers_.get(),
                                              .provider_classes = provider_classes_.get()},
                                     *infra_, events_.get());
  controller_ = std::make_unique<runtime::Controller>(
      "virtualmachine", *reconciler_, runtime::ControllerOptions{.workers = options_.workers});

  controller_->watch(*vms_);
  controller_->watchMapped(*classes_, [this](const runtime::Object& vm_class) {
    return vms_->keysByIndex("class", json::stringOr(vm_class.get(), "metadata.name"));
  });
  controller_->watchMapped(*images_, [this](const runtime::Object& image) {
    return vms_->keysByIndex("image", json::stringOr(image.get(), "metadata.name"));
  });
  // Selectors match on Provider labels and capabilities come from its status: every VM of the
  // Provider's namespace may be affected.
  controller_->watchMapped(*providers_, [this](const runtime::Object& provider) {
    return vms_->keysByIndex("namespace", json::stringOr(provider.get(), "metadata.namespace"));
  });
  // A ProviderClass publishing its machineKind unblocks the VMs placed (or waiting) on it; VMs
  // not placed yet carry an empty providerClass index value.
  controller_->watchMapped(*provider_classes_, [this](const runtime::Object& provider_class) {
    auto keys =
        vms_->keysByIndex("providerClass", json::stringOr(provider_class.get(), "metadata.name"));
    auto unplaced = vms_->keysByIndex("providerClass", "");
    keys.insert(keys.end(), unplaced.begin(), unplaced.end());
    return keys;
  });

  image_reconciler_ =
      std::make_unique<ImageReconciler>(client_, *images_, *providers_, options_.ns);
  image_controller_ = std::make_unique<runtime::Controller>(
      "vmimage", *image_reconciler_, runtime::ControllerOptions{.workers = 1});
  image_controller_->watch(*images_);
  // A Provider appearing or going changes which rows count.
  image_controller_->watchMapped(*providers_,
                                 [this](const runtime::Object&) { return images_->keys(); });
  if (options_.ns.empty()) {
    class_reconciler_ = std::make_unique<ClassStatusReconciler>(client_, *classes_, *providers_);
    class_controller_ = std::make_unique<runtime::Controller>(
        "vmclass", *class_reconciler_, runtime::ControllerOptions{.workers = 1});
    class_controller_->watch(*classes_, runtime::Controller::Updates::kIgnoreStatusOnly);
    // A Provider's failure domains decide which classes it serves. Its own status changes
    // (conditions, heartbeats) map too; the reconciler writes only when a class's status moves.
    class_controller_->watchMapped(*providers_,
                                   [this](const runtime::Object&) { return classes_->keys(); });
  }
  setUpClusters();
  setUpSnapshots();

  pools_ = std::make_unique<runtime::Informer>(client_, resources::kVirtualMachinePool, scoped);
  pool_reconciler_ = std::make_unique<PoolReconciler>(client_, *pools_, *vms_, images_.get());
  pool_controller_ = std::make_unique<runtime::Controller>(
      "virtualmachinepool", *pool_reconciler_, runtime::ControllerOptions{.workers = 1});
  pool_controller_->watch(*pools_);
  // Members are found by label, not owner: a claim re-parents its member.
  pool_controller_->watchMapped(*vms_, [](const runtime::Object& vm) { return poolOfMember(*vm); });
  // A new revision of a template's image recycles the pool's members.
  pool_controller_->watchMapped(*images_, [this](const runtime::Object& image) {
    const std::string name = json::stringOr(image.get(), "metadata.name");
    std::vector<std::string> keys;
    for (const auto& pool : pools_->list()) {
      if (json::stringOr(pool.get(), "spec.template.spec.imageRef.name") == name) {
        keys.push_back(runtime::objectKey(*pool));
      }
    }
    return keys;
  });
  setUpClaims();
}

Manager::~Manager() = default;

void Manager::setUpClaims() {
  claims_ = std::make_unique<runtime::Informer>(client_, resources::kVirtualMachineClaim,
                                                runtime::InformerOptions{.ns = options_.ns});
  claim_reconciler_ =
      std::make_unique<ClaimReconciler>(client_, *claims_, *pools_, *vms_, events_.get());
  // Claims made together are bound in parallel: the member's resourceVersion keeps that safe.
  claim_controller_ = std::make_unique<runtime::Controller>(
      "virtualmachineclaim", *claim_reconciler_,
      runtime::ControllerOptions{.workers = options_.workers});
  claim_controller_->watch(*claims_);
  claim_controller_->watchMapped(
      *vms_, [this](const runtime::Object& vm) { return claim_reconciler_->claimsOfMember(vm); });
  // A pool appearing wakes the claims that found it missing.
  claim_controller_->watchMapped(*pools_, [this](const runtime::Object& pool) {
    return claim_reconciler_->claimsOfPool(pool);
  });
}

void Manager::setUpClusters() {
  for (const char* kind : api::kInfraClusterKinds) {
    auto type =
        kube::discoverKind(client_, std::string(api::kInfraGroup) + "/" + api::kInfraVersion, kind);
    if (!type.ok()) {
      common::logger("controller")->info("{} aggregation off: {}", kind, type.status().message());
      continue;
    }
    ClusterAggregation c;
    c.kind = kind;
    c.clusters = std::make_unique<runtime::Informer>(client_, *type,
                                                     runtime::InformerOptions{.ns = options_.ns});
    c.reconciler = std::make_unique<ClusterReconciler>(client_, *type, *c.clusters, *providers_);
    std::string name = kind;  // the controller's name in metrics: vspherecluster, ...
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    c.controller = std::make_unique<runtime::Controller>(name, *c.reconciler,
                                                         runtime::ControllerOptions{.workers = 1});
    c.controller->watch(*c.clusters);
    runtime::Informer* clusters = c.clusters.get();
    c.controller->watchMapped(*providers_, [clusters](const runtime::Object& provider) {
      return clusters->keysByIndex("namespace",
                                   json::stringOr(provider.get(), "metadata.namespace"));
    });
    clusters_.push_back(std::move(c));
  }
  CapiAdoptionInputs inputs{.providers = providers_.get(), .events = events_.get()};
  for (const auto& c : clusters_) inputs.infra_clusters[c.kind] = c.clusters.get();
  capi_ = CapiAdoption::create(client_, options_.ns, std::move(inputs));
}

void Manager::setUpSnapshots() {
  const runtime::InformerOptions scoped{.ns = options_.ns};
  snapshots_ =
      std::make_unique<runtime::Informer>(client_, roles::kVirtualMachineSnapshotType, scoped);
  restores_ =
      std::make_unique<runtime::Informer>(client_, roles::kVirtualMachineRestoreType, scoped);
  snapshot_binder_ = std::make_unique<SnapshotBinder>(client_, SnapshotBinder::Kind::kSnapshot,
                                                      *snapshots_, *vms_);
  restore_binder_ = std::make_unique<SnapshotBinder>(client_, SnapshotBinder::Kind::kRestore,
                                                     *restores_, *snapshots_);
  snapshot_controller_ = std::make_unique<runtime::Controller>(
      "virtualmachinesnapshot", *snapshot_binder_, runtime::ControllerOptions{.workers = 1});
  snapshot_controller_->watch(*snapshots_, runtime::Controller::Updates::kIgnoreStatusOnly);
  // A VM placed (or created) binds the snapshots waiting for it.
  snapshot_controller_->watchMapped(
      *vms_, [this](const runtime::Object& vm) { return snapshot_binder_->namingKeys(vm); });
  restore_controller_ = std::make_unique<runtime::Controller>(
      "virtualmachinerestore", *restore_binder_, runtime::ControllerOptions{.workers = 1});
  restore_controller_->watch(*restores_, runtime::Controller::Updates::kIgnoreStatusOnly);
  // A snapshot becoming Ready (a status change) binds the restores waiting for it.
  restore_controller_->watchMapped(*snapshots_, [this](const runtime::Object& snapshot) {
    return restore_binder_->namingKeys(snapshot);
  });
}

bool Manager::synced() const {
  return vms_->hasSynced() && classes_->hasSynced() && images_->hasSynced() &&
         providers_->hasSynced() && provider_classes_->hasSynced() && pools_->hasSynced() &&
         claims_->hasSynced() && snapshots_->hasSynced() && restores_->hasSynced() &&
         std::all_of(clusters_.begin(), clusters_.end(),
                     [](const ClusterAggregation& c) { return c.clusters->hasSynced(); }) &&
         (!capi_ || capi_->synced());
}

void Manager::run(const std::atomic<bool>& stop) {
  infra_->start(&stop);
  std::vector<std::thread> threads;
  for (auto& c : clusters_) {
    threads.emplace_back([informer = c.clusters.get(), &stop] { informer->run(stop); });
  }
  if (capi_) threads.emplace_back([this, &stop] { capi_->runInformers(stop); });
  for (auto* informer :
       {vms_.get(), classes_.get(), images_.get(), providers_.get(), provider_classes_.get(),
        pools_.get(), claims_.get(), snapshots_.get(), restores_.get()}) {
    threads.emplace_back([informer, &stop] { informer->run(stop); });
  }
  while (!stop && !synced()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!stop) {
    std::thread images([this, &stop] { image_controller_->run(stop); });
    std::thread pools([this, &stop] { pool_controller_->run(stop); });
    std::thread claims([this, &stop] { claim_controller_->run(stop); });
    std::thread snapshots([this, &stop] { snapshot_controller_->run(stop); });
    std::thread restores([this, &stop] { restore_controller_->run(stop); });
    std::vector<std::thread> clusters;
    for (auto& c : clusters_) {
      clusters.emplace_back([controller = c.controller.get(), &stop] { controller->run(stop); });
    }
    std::thread classes([this, &stop] {
      if (class_controller_) class_controller_->run(stop);
    });
    std::thread capi([this, &stop] {
      if (capi_) capi_->runControllers(stop);
    });
    controller_->run(stop);
    images.join();
    pools.join();
    claims.join();
    snapshots.join();
    restores.join();
    for (auto& thread : clusters) thread.join();
    classes.join();
    capi.join();
  }
  for (auto& thread : threads) thread.join();
  infra_->stop();
  if (events_) events_->flush();
}

}  // namespace banlieue::controller
