// Machines Cluster API makes from banlieue's templates (docs/adr/0050): which infrastructure
// objects the controller adopts, and the Provider, place and bootstrap data it gives them. Pure:
// the reconciler reads the objects and applies the body; the same inputs give the same answer.
//
// Cluster API copies <Kind>MachineTemplate.spec.template.spec into a <Kind>Machine owned by a
// Machine, labels it with the cluster's name, and stamps the failure domain it chose on
// Machine.spec.failureDomain. The copy names no Provider and, when the template leaves the place
// out, no place: the failure domain decides both, through the InfraCluster that
// Cluster.spec.infrastructureRef names (the same lookup the failure-domain aggregation makes, so
// every failure domain Cluster API was offered resolves).
#pragma once

#include "host/api/capi_contract.h"
#include "host/api/infra_cluster.h"
#include "host/api/provider.h"
#include "host/api/user_data_contract.h"
#include "host/common/status_or.h"

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace banlieue::controller::capi {

// The bootstrap Secret's type is the opt-in that lets a Machine's dataSecretName reach a guest
// (as the label does for a VM's userData in docs/adr/0026).
using api::kBootstrapDataKey;
using api::kBootstrapSecretType;
using api::kClusterNameLabel;
using api::kPausedAnnotation;
using api::kUserDataKeyAnnotation;

// On the template's metadata (Cluster API copies it to each machine): the Provider storage
// class the machine's disks are placed on; absent, the failure domain's first.
inline constexpr const char* kStorageClassAnnotation = "banlieue.io/storage-class";

// Refusal reasons (the object's condition until the inputs change).
namespace reasons {
inline constexpr const char* kPaused = "Paused";
inline constexpr const char* kWaitingForMachine = "WaitingForMachine";
inline constexpr const char* kWaitingForCluster = "WaitingForCluster";
// Cluster API's contract: no machine is made before its bootstrap data exists.
inline constexpr const char* kWaitingForBootstrapData = "WaitingForBootstrapData";
inline constexpr const char* kClusterKindMismatch = "ClusterKindMismatch";
inline constexpr const char* kPlacementUnresolved = "PlacementUnresolved";
inline constexpr const char* kFailureDomainUnknown = "FailureDomainUnknown";
inline constexpr const char* kPlacementConflict = "PlacementConflict";
inline constexpr const char* kUserDataNotAllowed = "UserDataNotAllowed";
inline constexpr const char* kUnsupportedKind = "UnsupportedKind";
}  // namespace reasons

// The name of the cluster.x-k8s.io Machine among `object`'s ownerReferences, if any.
std::optional<std::string> owningMachine(const rapidjson::Value& object);

// True for an object Cluster API made that no Provider serves yet: the cluster-name label, an
// owning Machine, and no banlieue.io/provider label.
bool awaitsAdoption(const rapidjson::Value& object);

// The InfraCluster kind that places machines of `machine_kind` (VSphereMachine: VSphereCluster),
// or empty for a kind banlieue does not place.
std::string clusterKindFor(const std::string& machine_kind);

struct AdoptionInput {
  const rapidjson::Value* infra_machine = nullptr;  // Cluster API's copy; required
  const rapidjson::Value* machine = nullptr;        // its Machine; null while not seen
  const rapidjson::Value* cluster = nullptr;        // the label's Cluster; null while not seen
  // What the Cluster's spec.infrastructureRef names (same namespace), and its kind; null
  // while not seen.
  const api::InfraCluster* infra_cluster = nullptr;
  std::string infra_cluster_kind;
  const std::vector<api::Provider>* providers = nullptr;  // the namespace's; required
  // The type and resourceVersion of the Secret the Machine names as bootstrap data, once read
  // (nullopt: not found, or the Machine names none yet).
  std::optional<std::string> bootstrap_secret_type;
  std::string bootstrap_secret_revision;
};

struct Adoption {
  std::string provider;
  std::string failure_domain;
  // spec fields the template left out, as the failure domain and the Provider fill them
  std::vector<std::pair<std::string, std::string>> place;
  std::string bootstrap_secret;  // the Machine's dataSecretName
  std::string bootstrap_secret_revision;
};

// The adoption, or a FailedPrecondition whose reason is one of `reasons` and whose message
// says what is missing or wrong.
StatusOr<Adoption> planAdoption(const AdoptionInput& input);

// The server-side apply body (controller field manager) that carries `plan` onto
// `infra_machine`: the banlieue.io/provider label, spec.providerRef, spec.failureDomain (when
// there is one), the place, and the bootstrap data by reference: the annotations of
// docs/adr/0026 and banlieue.io/user-data-key naming Cluster API's key, `value`.
rapidjson::Document adoptionBody(const rapidjson::Value& infra_machine, const Adoption& plan);

}  // namespace banlieue::controller::capi
