#include "host/roles/controller/capi_adopter.h"

#include "host/api/capi_contract.h"
#include "host/api/codec.h"
#include "host/api/infra_cluster.h"
#include "host/api/kinds.h"
#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/kube/discovery.h"
#include "host/roles/controller/capi_adoption.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/infra_kinds.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <cctype>
#include <thread>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;

constexpr const char* kCapiGroup = "cluster.x-k8s.io";
// The machine kinds banlieue places for Cluster API (capi::clusterKindFor).
constexpr const char* kMachineKinds[] = {"VSphereMachine", "LibvirtMachine", "ProxmoxMachine"};
// A bootstrap Secret is not watched (the controller may not list Secrets): while the Machine
// names one that is not there yet, the object is looked at again this often.
constexpr std::chrono::seconds kBootstrapDataPoll{10};
// ... and while the controller may not read Secrets in the machine's namespace.
constexpr std::chrono::seconds kNotAllowedPoll{60};

class AdoptionReconciler final : public runtime::Reconciler {
 public:
  AdoptionReconciler(kube::KubeClient& client, kube::ResourceType type, runtime::Informer& objects,
                     runtime::Informer& machines, runtime::Informer& clusters,
                     const CapiAdoptionInputs& inputs)
      : client_(client),
        type_(std::move(type)),
        objects_(objects),
        machines_(machines),
        clusters_(clusters),
        inputs_(inputs) {}

  runtime::Result reconcile(const runtime::Request& request) override {
    auto object = objects_.get(request.key());
    if (!object || !capi::awaitsAdoption(*object) ||
        json::find(object.get(), "metadata.deletionTimestamp") != nullptr) {
      return runtime::Result::done();
    }
    const rapidjson::Value& o = *object;
    const std::string& ns = request.ns;
    auto machine = machines_.get(ns + "/" + capi::owningMachine(o).value_or(""));
    auto cluster = clusters_.get(ns + "/" + runtime::label(o, api::kClusterNameLabel));

    capi::AdoptionInput in;
    in.infra_machine = &o;
    in.machine = machine.get();
    in.cluster = cluster.get();
    std::optional<api::InfraCluster> infra_cluster;
    if (cluster) {
      // v1beta2 names apiGroup and kind, v1beta1 apiVersion and kind: the kind decides.
      in.infra_cluster_kind = json::stringOr(cluster.get(), "spec.infrastructureRef.kind");
      const std::string name = json::stringOr(cluster.get(), "spec.infrastructureRef.name");
      auto informer = inputs_.infra_clusters.find(in.infra_cluster_kind);
      runtime::Object found;
      if (informer != inputs_.infra_clusters.end() && !name.empty()) {
        found = informer->second->get(ns + "/" + name);
      }
      if (found) {
        auto decoded = api::fromJson<api::InfraCluster>(json::serialize(*found));
        if (decoded.ok()) infra_cluster = std::move(decoded).value();
      }
    }
    if (infra_cluster) in.infra_cluster = &*infra_cluster;
    std::vector<api::Provider> providers;
    for (const auto& p : inputs_.providers->byIndex("namespace", ns)) {
      auto provider = api::fromJson<api::Provider>(json::serialize(*p));
      if (provider.ok()) providers.push_back(std::move(provider).value());
    }
    in.providers = &providers;

    bool secret_missing = false;
    const std::string secret_name =
        machine ? json::stringOr(machine.get(), "spec.bootstrap.dataSecretName") : "";
    if (!secret_name.empty()) {
      // Its type and revision only: the data itself stays in the Secret (docs/adr/0050).
      auto secret = client_.get(kube::resources::kSecret, ns, secret_name);
      if (secret.ok()) {
        in.bootstrap_secret_type = json::stringOr(&*secret, "type");
        in.bootstrap_secret_revision = json::stringOr(&*secret, "metadata.resourceVersion");
      } else if (kube::isNotFound(secret.status())) {
        secret_missing = true;
      } else if (kube::isForbidden(secret.status())) {
        // Not a userData namespace: said on the object, and asked again now and then (the
        // RoleBinding that grants it changes nothing this controller watches).
        Status refusal(Code::kFailedPrecondition, capi::reasons::kUserDataNotAllowed,
                       "the controller may not read the bootstrap data Secret " + secret_name +
                           " in namespace " + ns +
                           ": run `banlieue bootstrap operator --userdata-namespace " + ns +
                           "` to let Machines there boot with their bootstrap data");
        if (auto written = report(o, refusal); !written.isOk()) {
          return runtime::Result::retry(written);
        }
        return runtime::Result::requeueAfter(kNotAllowedPoll);
      } else {
        return runtime::Result::retry(secret.status());
      }
    }

    auto plan = capi::planAdoption(in);
    if (!plan.ok()) {
      if (auto written = report(o, plan.status()); !written.isOk()) {
        return runtime::Result::retry(written);
      }
      return secret_missing ? runtime::Result::requeueAfter(kBootstrapDataPoll)
                            : runtime::Result::done();
    }
    auto body = capi::adoptionBody(o, *plan);
    auto applied = client_.apply(type_, ns, request.name, json::serialize(body),
                                 {.field_manager = kFieldManager, .force = true});
    if (!applied.ok()) return runtime::Result::retry(applied.status());
    std::string message = "served by Provider " + plan->provider;
    if (!plan->failure_domain.empty()) message += " in failure domain " + plan->failure_domain;
    common::logger("controller")
        ->info("adopted {} {}/{}: {}", json::stringOr(&o, "kind"), ns, request.name, message);
    if (inputs_.events != nullptr) inputs_.events->normal(*applied, "Adopted", "Adopt", message);
    return runtime::Result::done();
  }

 private:
  // Ready=False with the plan's reason on the object (and Paused=True when that is the reason),
  // written only when it changes: what `kubectl describe` shows while the object waits.
  Status report(const rapidjson::Value& object, const Status& refusal) {
    const bool paused = refusal.reason() == capi::reasons::kPaused;
    const auto* ready = runtime::condition(object, "Ready");
    const auto* paused_now = runtime::condition(object, "Paused");
    if (ready != nullptr && json::stringOr(ready, "status") == "False" &&
        json::stringOr(ready, "reason") == refusal.reason() &&
        json::stringOr(ready, "message") == refusal.message() &&
        (paused_now != nullptr && json::stringOr(paused_now, "status") == "True") == paused) {
      return Status::ok();
    }
    const std::string now = runtime::rfc3339Now();
    const int64_t generation = json::integer(&object, "metadata.generation").value_or(0);
    rapidjson::Document body(rapidjson::kObjectType);
    auto& a = body.GetAllocator();
    body.AddMember("apiVersion", json::stringValue(json::stringOr(&object, "apiVersion"), a), a);
    body.AddMember("kind", json::stringValue(json::stringOr(&object, "kind"), a), a);
    rapidjson::Value metadata(rapidjson::kObjectType);
    metadata.AddMember("name", json::stringValue(json::stringOr(&object, "metadata.name"), a), a);
    metadata.AddMember("namespace",
                       json::stringValue(json::stringOr(&object, "metadata.namespace"), a), a);
    body.AddMember("metadata", metadata, a);
    rapidjson::Value conditions(rapidjson::kArrayType);
    auto add = [&](const char* type, const char* status, const std::string& reason,
                   const std::string& message, const rapidjson::Value* previous) {
      rapidjson::Value c(rapidjson::kObjectType);
      c.AddMember("type", rapidjson::StringRef(type), a);
      c.AddMember("status", rapidjson::StringRef(status), a);
      c.AddMember("observedGeneration", generation, a);
      std::string since = previous != nullptr && json::stringOr(previous, "status") == status
                              ? json::stringOr(previous, "lastTransitionTime", now)
                              : now;
      c.AddMember("lastTransitionTime", json::stringValue(since, a), a);
      c.AddMember("reason", json::stringValue(reason, a), a);
      c.AddMember("message", json::stringValue(message, a), a);
      conditions.PushBack(c, a);
    };
    add("Ready", "False", refusal.reason(), refusal.message(), ready);
    if (paused) {
      add("Paused", "True", capi::reasons::kPaused, refusal.message(), paused_now);
    } else if (paused_now != nullptr) {
      add("Paused", "False", "NotPaused", "not paused", paused_now);
    }
    rapidjson::Value status(rapidjson::kObjectType);
    status.AddMember("conditions", conditions, a);
    body.AddMember("status", status, a);
    auto applied =
        client_.apply(type_, json::stringOr(&object, "metadata.namespace"),
                      json::stringOr(&object, "metadata.name"), json::serialize(body),
                      {.field_manager = kFieldManager, .force = true, .subresource = "status"});
    return applied.ok() ? Status::ok() : applied.status();
  }

  kube::KubeClient& client_;
  kube::ResourceType type_;
  runtime::Informer& objects_;
  runtime::Informer& machines_;
  runtime::Informer& clusters_;
  const CapiAdoptionInputs& inputs_;
};

}  // namespace

struct CapiAdoption::Kind {
  std::string kind;
  std::unique_ptr<runtime::Informer> informer;
  std::unique_ptr<AdoptionReconciler> reconciler;
  std::unique_ptr<runtime::Controller> controller;
};

std::unique_ptr<CapiAdoption> CapiAdoption::create(kube::KubeClient& client, const std::string& ns,
                                                   CapiAdoptionInputs inputs) {
  auto log = common::logger("controller");
  auto version = preferredApiVersion(client, kCapiGroup);
  StatusOr<kube::ResourceType> machines = version.ok()
                                              ? kube::discoverKind(client, *version, "Machine")
                                              : StatusOr<kube::ResourceType>(version.status());
  StatusOr<kube::ResourceType> clusters = version.ok()
                                              ? kube::discoverKind(client, *version, "Cluster")
                                              : StatusOr<kube::ResourceType>(version.status());
  if (!machines.ok() || !clusters.ok()) {
    log->info(
        "Cluster API's Machines and Clusters are not served ({}): its machines are not "
        "adopted; install Cluster API before banlieue, or restart the controller after",
        (!machines.ok() ? machines.status() : clusters.status()).message());
    return nullptr;
  }
  // An informer this controller may not list never syncs, and the whole controller would wait
  // on it (RBAC older than the binary): asked once, here.
  for (const auto* type : {&*machines, &*clusters}) {
    auto probe = client.list(*type, ns, kube::ListOptions{.limit = 1});
    if (!probe.ok() && kube::isForbidden(probe.status())) {
      log->warn(
          "Cluster API's machines are not adopted: the controller may not list {}.{} ({}); "
          "apply this version's RBAC (banlieue bootstrap operator)",
          type->plural, type->group, probe.status().message());
      return nullptr;
    }
  }
  std::unique_ptr<CapiAdoption> adoption(
      new CapiAdoption(client, ns, std::move(inputs), *machines, *clusters));
  if (adoption->kinds_.empty()) {
    log->info("no machine kind banlieue places for Cluster API is served: nothing to adopt");
  }
  return adoption;
}

CapiAdoption::CapiAdoption(kube::KubeClient& client, std::string ns, CapiAdoptionInputs inputs,
                           const kube::ResourceType& machines, const kube::ResourceType& clusters)
    : client_(client), ns_(std::move(ns)), inputs_(std::move(inputs)) {
  const runtime::InformerOptions scoped{.ns = ns_};
  machines_ = std::make_unique<runtime::Informer>(client_, machines, scoped);
  clusters_ = std::make_unique<runtime::Informer>(client_, clusters, scoped);
  const std::string awaiting =
      std::string(api::kClusterNameLabel) + ",!" + kProviderLabel;  // capi::awaitsAdoption
  for (const char* kind : kMachineKinds) {
    auto type =
        kube::discoverKind(client_, std::string(api::kInfraGroup) + "/" + api::kInfraVersion, kind);
    if (!type.ok()) continue;
    auto k = std::make_unique<Kind>();
    k->kind = kind;
    k->informer = std::make_unique<runtime::Informer>(
        client_, *type, runtime::InformerOptions{.ns = ns_, .label_selector = awaiting});
    k->informer->addIndexer("machine", [](const rapidjson::Value& o) {
      return std::vector<std::string>{json::stringOr(&o, "metadata.namespace") + "/" +
                                      capi::owningMachine(o).value_or("")};
    });
    k->informer->addIndexer("cluster", [](const rapidjson::Value& o) {
      return std::vector<std::string>{json::stringOr(&o, "metadata.namespace") + "/" +
                                      runtime::label(o, api::kClusterNameLabel)};
    });
    k->reconciler = std::make_unique<AdoptionReconciler>(client_, *type, *k->informer, *machines_,
                                                         *clusters_, inputs_);
    std::string name = "capi-" + std::string(kind);  // the controller's name in metrics
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    k->controller = std::make_unique<runtime::Controller>(name, *k->reconciler,
                                                          runtime::ControllerOptions{.workers = 1});
    runtime::Informer* objects = k->informer.get();
    k->controller->watch(*objects);
    k->controller->watchMapped(*machines_, [objects](const runtime::Object& machine) {
      return objects->keysByIndex("machine", runtime::objectKey(*machine));
    });
    k->controller->watchMapped(*clusters_, [objects](const runtime::Object& cluster) {
      return objects->keysByIndex("cluster", runtime::objectKey(*cluster));
    });
    // A Provider's failure domains and an InfraCluster's selection decide the place.
    auto by_namespace = [objects](const runtime::Object& changed) {
      return objects->keysByIndex("namespace", json::stringOr(changed.get(), "metadata.namespace"));
    };
    k->controller->watchMapped(*inputs_.providers, by_namespace);
    for (const auto& [cluster_kind, informer] : inputs_.infra_clusters) {
      k->controller->watchMapped(*informer, by_namespace);
    }
    kinds_.push_back(std::move(k));
  }
}

CapiAdoption::~CapiAdoption() = default;

void CapiAdoption::runInformers(const std::atomic<bool>& stop) {
  std::vector<std::thread> threads;
  threads.emplace_back([this, &stop] { machines_->run(stop); });
  threads.emplace_back([this, &stop] { clusters_->run(stop); });
  for (auto& k : kinds_) {
    threads.emplace_back([informer = k->informer.get(), &stop] { informer->run(stop); });
  }
  for (auto& thread : threads) thread.join();
}

void CapiAdoption::runControllers(const std::atomic<bool>& stop) {
  std::vector<std::thread> threads;
  for (auto& k : kinds_) {
    threads.emplace_back([controller = k->controller.get(), &stop] { controller->run(stop); });
  }
  for (auto& thread : threads) thread.join();
}

bool CapiAdoption::synced() const {
  return machines_->hasSynced() && clusters_->hasSynced() &&
         std::all_of(kinds_.begin(), kinds_.end(),
                     [](const auto& k) { return k->informer->hasSynced(); });
}

runtime::Controller* CapiAdoption::controller(const std::string& machine_kind) {
  for (auto& k : kinds_) {
    if (k->kind == machine_kind) return k->controller.get();
  }
  return nullptr;
}

}  // namespace banlieue::controller
