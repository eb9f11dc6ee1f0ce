#include "host/roles/controller/capi_adoption.h"

#include "host/api/user_data_contract.h"
#include "host/roles/controller/cluster_aggregate.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/scheduler.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>

namespace banlieue::controller::capi {
namespace {

namespace json = sdk::json;

Status refused(const char* reason, std::string message) {
  return error(Code::kFailedPrecondition, reason, std::move(message));
}

using runtime::annotation;
using runtime::label;

std::string rawOf(const api::ProviderFailureDomain& fd, const char* key) {
  auto it = fd.attributes.raw.find(key);
  return it == fd.attributes.raw.end() ? std::string() : it->second;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// The names of the failure domains `cluster` advertises.
std::vector<std::string> advertised(const api::InfraCluster& cluster,
                                    const std::vector<api::Provider>& providers) {
  std::vector<std::string> names;
  for (const auto& source : advertisedFailureDomains(cluster, providers)) {
    names.push_back(source.failure_domain->name);
  }
  return names;
}

// Where a kind's place comes from: the fields the failure domain decides (its raw attribute of
// the same name) and the one the storage class decides.
struct PlaceShape {
  std::vector<const char*> from_failure_domain;
  const char* storage;
};

PlaceShape placeShapeOf(const std::string& kind) {
  if (kind == "VSphereMachine") return {{"datacenter", "cluster"}, "datastore"};
  if (kind == "ProxmoxMachine") return {{"node"}, "storage"};
  return {{}, "pool"};  // LibvirtMachine: a host is its failure domain
}

// A place field: taken from the failure domain (the template must agree when it states one),
// or a choice the template may make itself (a datastore, a pool, a domain name).
struct PlaceField {
  const char* field;
  std::string value;
  bool from_failure_domain;
};

// The place fields a machine of `kind` gets in failure domain `fd` of `provider`.
StatusOr<std::vector<PlaceField>> placeFor(const std::string& kind,
                                           const rapidjson::Value& infra_machine,
                                           const api::Provider& provider,
                                           const api::ProviderFailureDomain& fd) {
  const std::string where = "failure domain " + fd.name + " of Provider " + provider.metadata.name;
  const auto& available = fd.attributes.available_storage_classes;
  std::string storage_class = annotation(infra_machine, kStorageClassAnnotation);
  if (storage_class.empty() && !available.empty()) storage_class = available.front();
  if (storage_class.empty()) {
    return refused(reasons::kPlacementUnresolved, where + " offers no storage class");
  }
  if (std::find(available.begin(), available.end(), storage_class) == available.end()) {
    return refused(reasons::kPlacementUnresolved, "storage class " + storage_class +
                                                      " (annotation " + kStorageClassAnnotation +
                                                      ") is not available in " + where +
                                                      " (available: " + joined(available) + ")");
  }
  const PlaceShape shape = placeShapeOf(kind);
  std::vector<PlaceField> place;
  for (const char* field : shape.from_failure_domain)
    place.push_back({field, rawOf(fd, field), true});
  place.push_back(
      {shape.storage,
       storageBackendId(provider, storage_class, rawOf(fd, "datacenter"), rawOf(fd, "cluster")),
       false});
  if (kind == "LibvirtMachine") {
    // Domain names are flat per libvirt host: the builder's <namespace>-<name>, said here so
    // the object shows the name its domain has.
    place.push_back({"domainName",
                     json::stringOr(&infra_machine, "metadata.namespace") + "-" +
                         json::stringOr(&infra_machine, "metadata.name"),
                     false});
  }
  return place;
}

// The place fields a kind needs before its provider can create it (a libvirt domain name
// defaults in the plugin).
std::vector<const char*> placeFieldsOf(const std::string& kind) {
  PlaceShape shape = placeShapeOf(kind);
  std::vector<const char*> fields = shape.from_failure_domain;
  fields.push_back(shape.storage);
  return fields;
}

}  // namespace

std::optional<std::string> owningMachine(const rapidjson::Value& object) {
  const auto* owners = json::find(&object, "metadata.ownerReferences");
  if (owners == nullptr || !owners->IsArray()) return std::nullopt;
  for (const auto& owner : owners->GetArray()) {
    if (json::stringOr(&owner, "apiVersion").rfind("cluster.x-k8s.io/", 0) == 0 &&
        json::stringOr(&owner, "kind") == "Machine" && !json::stringOr(&owner, "name").empty()) {
      return json::stringOr(&owner, "name");
    }
  }
  return std::nullopt;
}

bool awaitsAdoption(const rapidjson::Value& object) {
  return !label(object, kClusterNameLabel).empty() && owningMachine(object).has_value() &&
         label(object, kProviderLabel).empty();
}

std::string clusterKindFor(const std::string& machine_kind) {
  if (machine_kind == "VSphereMachine") return "VSphereCluster";
  if (machine_kind == "LibvirtMachine") return "LibvirtCluster";
  if (machine_kind == "ProxmoxMachine") return "ProxmoxCluster";
  return {};
}

StatusOr<Adoption> planAdoption(const AdoptionInput& in) {
  const rapidjson::Value& object = *in.infra_machine;
  const std::string kind = json::stringOr(&object, "kind");
  const std::string who = kind + " " + json::stringOr(&object, "metadata.name");
  const std::string cluster_kind = clusterKindFor(kind);
  if (cluster_kind.empty()) {
    return refused(reasons::kUnsupportedKind,
                   who +
                       ": banlieue places only VSphereMachine, LibvirtMachine and ProxmoxMachine "
                       "for Cluster API");
  }
  const std::string cluster_name = label(object, kClusterNameLabel);
  if (runtime::hasAnnotation(object, kPausedAnnotation) ||
      (in.cluster != nullptr && json::boolean(in.cluster, "spec.paused", false))) {
    return refused(reasons::kPaused, who + " is paused (annotation " +
                                         std::string(kPausedAnnotation) + " or Cluster " +
                                         cluster_name + " spec.paused)");
  }
  const std::string machine_name = owningMachine(object).value_or("");
  if (in.machine == nullptr) {
    return refused(reasons::kWaitingForMachine,
                   who + ": its Machine " + machine_name + " is not there (yet)");
  }
  if (in.cluster == nullptr) {
    return refused(reasons::kWaitingForCluster,
                   who + ": its Cluster " + cluster_name + " is not there (yet)");
  }

  Adoption plan;
  plan.bootstrap_secret = json::stringOr(in.machine, "spec.bootstrap.dataSecretName");
  if (plan.bootstrap_secret.empty()) {
    return refused(reasons::kWaitingForBootstrapData,
                   who + ": Machine " + machine_name +
                       " names no bootstrap data yet (spec.bootstrap.dataSecretName)");
  }
  if (!in.bootstrap_secret_type) {
    return refused(
        reasons::kWaitingForBootstrapData,
        who + ": the bootstrap data Secret " + plan.bootstrap_secret + " is not there (yet)");
  }
  if (*in.bootstrap_secret_type != kBootstrapSecretType) {
    return refused(reasons::kUserDataNotAllowed,
                   who + ": Secret " + plan.bootstrap_secret + " is of type " +
                       *in.bootstrap_secret_type + ", not " + kBootstrapSecretType +
                       " (what Cluster API's bootstrap providers make): only such a Secret may "
                       "reach a guest as a Machine's bootstrap data");
  }
  plan.bootstrap_secret_revision = in.bootstrap_secret_revision;

  const std::string stated_provider = json::stringOr(&object, "spec.providerRef.name");
  plan.failure_domain = json::stringOr(in.machine, "spec.failureDomain");
  if (plan.failure_domain.empty())
    plan.failure_domain = json::stringOr(&object, "spec.failureDomain");
  if (plan.failure_domain.empty()) {
    // No failure domain: the template must name the Provider and state the whole place.
    std::vector<std::string> missing;
    for (const char* field : placeFieldsOf(kind)) {
      if (json::stringOr(&object, std::string("spec.") + field).empty()) {
        missing.push_back(std::string("spec.") + field);
      }
    }
    if (stated_provider.empty()) missing.insert(missing.begin(), "spec.providerRef");
    if (!missing.empty()) {
      return refused(reasons::kPlacementUnresolved,
                     who + ": Machine " + machine_name +
                         " has no failure domain, and the template leaves out " + joined(missing));
    }
    plan.provider = stated_provider;
    return plan;
  }

  if (!in.infra_cluster_kind.empty() && in.infra_cluster_kind != cluster_kind) {
    return refused(reasons::kClusterKindMismatch,
                   who + ": Cluster " + cluster_name + "'s infrastructureRef is a " +
                       in.infra_cluster_kind + "; a " + kind + "'s failure domains come from a " +
                       cluster_kind);
  }
  if (in.infra_cluster == nullptr) {
    return refused(reasons::kWaitingForCluster, who + ": the infrastructure cluster of Cluster " +
                                                    cluster_name + " is not there (yet)");
  }
  FailureDomainSource source =
      failureDomainSource(*in.infra_cluster, *in.providers, plan.failure_domain);
  if (source.provider == nullptr) {
    return refused(reasons::kFailureDomainUnknown,
                   who + ": failure domain " + plan.failure_domain + " is not one " + cluster_kind +
                       " " + in.infra_cluster->metadata.name + " advertises (" +
                       joined(advertised(*in.infra_cluster, *in.providers)) + ")");
  }
  plan.provider = source.provider->metadata.name;
  if (!stated_provider.empty() && stated_provider != plan.provider) {
    return refused(reasons::kPlacementConflict, who + ": the template names Provider " +
                                                    stated_provider + ", but failure domain " +
                                                    plan.failure_domain + " is Provider " +
                                                    plan.provider + "'s");
  }
  auto place = placeFor(kind, object, *source.provider, *source.failure_domain);
  if (!place.ok()) return place.status();
  for (const auto& field : *place) {
    const std::string stated = json::stringOr(&object, std::string("spec.") + field.field);
    if (!stated.empty()) {
      if (field.from_failure_domain && stated != field.value) {
        std::string message = who;
        message.append(": spec.").append(field.field).append(" is ").append(stated);
        message.append(", but failure domain ").append(plan.failure_domain).append(" has ");
        message.append(field.field).append(" ").append(field.value);
        return refused(reasons::kPlacementConflict, std::move(message));
      }
      continue;  // the template's own choice
    }
    if (field.value.empty()) {
      std::string message = who;
      message.append(": failure domain ").append(plan.failure_domain).append(" of Provider ");
      message.append(plan.provider).append(" reports no ").append(field.field);
      return refused(reasons::kPlacementUnresolved, std::move(message));
    }
    plan.place.emplace_back(field.field, field.value);
  }
  return plan;
}

rapidjson::Document adoptionBody(const rapidjson::Value& infra_machine, const Adoption& plan) {
  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  auto copy = [&](const char* path) {
    return json::stringValue(json::stringOr(&infra_machine, path), a);
  };
  body.AddMember("apiVersion", copy("apiVersion"), a);
  body.AddMember("kind", copy("kind"), a);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", copy("metadata.name"), a);
  metadata.AddMember("namespace", copy("metadata.namespace"), a);
  rapidjson::Value labels(rapidjson::kObjectType);
  labels.AddMember(rapidjson::StringRef(kProviderLabel), json::stringValue(plan.provider, a), a);
  metadata.AddMember("labels", labels, a);
  rapidjson::Value annotations(rapidjson::kObjectType);
  annotations.AddMember(rapidjson::StringRef(api::kUserDataSecretAnnotation),
                        json::stringValue(plan.bootstrap_secret, a), a);
  annotations.AddMember(rapidjson::StringRef(api::kUserDataRevisionAnnotation),
                        json::stringValue(plan.bootstrap_secret_revision, a), a);
  annotations.AddMember(rapidjson::StringRef(kUserDataKeyAnnotation),
                        rapidjson::StringRef(kBootstrapDataKey), a);
  metadata.AddMember("annotations", annotations, a);
  body.AddMember("metadata", metadata, a);
  rapidjson::Value spec(rapidjson::kObjectType);
  rapidjson::Value ref(rapidjson::kObjectType);
  ref.AddMember("name", json::stringValue(plan.provider, a), a);
  spec.AddMember("providerRef", ref, a);
  if (!plan.failure_domain.empty()) {
    spec.AddMember("failureDomain", json::stringValue(plan.failure_domain, a), a);
  }
  for (const auto& [field, value] : plan.place) {
    spec.AddMember(json::stringValue(field, a), json::stringValue(value, a), a);
  }
  body.AddMember("spec", spec, a);
  return body;
}

}  // namespace banlieue::controller::capi
