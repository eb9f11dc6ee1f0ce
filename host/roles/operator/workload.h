// The workload the operator mints for one Provider from its ProviderClass, as pure builders
// (banlieue-spec 4.2): ServiceAccount, Role, RoleBinding, the import identity, the
// ClusterRoleBinding to the backend's shared ClusterRole and the Deployment running
// `banlieue provider <backend>`. The reconciler applies these objects in order and prunes
// everything else carrying the Provider's labels.
#pragma once

#include "host/api/provider.h"
#include "host/common/proxy_environment.h"
#include "host/common/status_or.h"
#include "host/kube/client.h"
#include "host/roles/images/import_job.h"

#include <rapidjson/document.h>

#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace banlieue::roles::provider_operator {

namespace rbac {
inline const kube::ResourceType kRole{"rbac.authorization.k8s.io", "v1", "roles", true};
inline const kube::ResourceType kRoleBinding{"rbac.authorization.k8s.io", "v1", "rolebindings",
                                             true};
inline const kube::ResourceType kClusterRole{"rbac.authorization.k8s.io", "v1", "clusterroles",
                                             false};
inline const kube::ResourceType kClusterRoleBinding{"rbac.authorization.k8s.io", "v1",
                                                    "clusterrolebindings", false};
}  // namespace rbac

inline const kube::ResourceType kProviderType{"banlieue.io", "v1alpha1", "providers", true};
inline const kube::ResourceType kProviderClassType{"banlieue.io", "v1alpha1", "providerclasses",
                                                   false};

// Where the import Jobs of the image pipeline run (ServiceAccount images::kImportServiceAccount,
// which bootstrap creates); each Provider's runtime manages its Jobs there through a RoleBinding
// to kProviderImportsClusterRole (bootstrap's), docs/adr/0015.
inline constexpr const char* kDefaultBuildNamespace = images::kImageBuildNamespace;
inline constexpr const char* kImportServiceAccount = images::kImportServiceAccount;
inline constexpr const char* kProviderImportsClusterRole = "banlieue-provider-imports";

struct WorkloadOptions {
  // What the Deployment passes as --plugin-dir: where plugins live inside the image.
  std::string image_plugin_dir = "/usr/lib/banlieue/plugins";
  std::string build_namespace = kDefaultBuildNamespace;
  // Passed on to every provider container (the operator's own HTTPS_PROXY and NO_PROXY).
  common::EnvironmentVariables proxy_env;
};

struct MintedObject {
  kube::ResourceType type;
  std::string ns;  // empty for cluster-scoped objects
  std::string name;
  rapidjson::Document body;
};

// The kinds the operator mints, in apply order; pruning and cleanup look at exactly these.
const std::vector<kube::ResourceType>& mintedTypes();

// ReplicaSets (an apps/v1 list) left by a Deployment that no longer exists: their controller
// owner is a Deployment whose uid is not in `live_deployment_uids`. Kubernetes' garbage
// collector deletes them, except when it missed the Deployment's deletion (seen across an
// apiserver restart with kube-controller-manager 1.20: the old ReplicaSet and its pod stayed
// for good beside the new Deployment's, competing for the Provider's Lease). Returns
// "namespace/name" of each.
std::vector<std::string> staleReplicaSets(const rapidjson::Value& replica_sets,
                                          const std::set<std::string>& live_deployment_uids);

struct Workload {
  bool external = false;
  std::string name;                   // Deployment, ServiceAccount, Role, RoleBinding, Lease
  std::string cluster_name;           // ClusterRoleBinding
  std::string workload_ns;            // Deployment and ServiceAccount
  std::string provider_ns;            // Roles and RoleBindings, next to the Secret
  std::vector<MintedObject> objects;  // apply order: SA, Role, RoleBinding, import Role and
                                      // RoleBinding, imports RoleBinding (build namespace),
                                      // ClusterRoleBinding, Deployment
  // (plural, namespace, name) of every object above: what pruning keeps.
  std::set<std::tuple<std::string, std::string, std::string>> keep;
};

// "repo:tag", "repo@digest" when the tag is empty, or "repo:tag@digest".
std::string imageReference(const api::ContainerImage& image);

// Refusals carry the CamelCase reason the operator reports: InvalidImage (Managed class
// without a usable image), PodFieldsOnExternal (External class with image or pod fields),
// ProviderNameTooLong (names that cannot be label values).
Status validateClassForWorkload(const api::ProviderClass& provider_class);

// `reads_user_data`: the Provider's namespace uses userData (bootstrap bound the controller's
// userData role there), so the provider may read Secrets of the namespace by any name, for its
// machines' rendered userData (docs/adr/0026); otherwise only its credentials and CA Secrets.
StatusOr<Workload> buildWorkload(const api::Provider& provider,
                                 const api::ProviderClass& provider_class,
                                 const WorkloadOptions& options, bool reads_user_data = false);

// The Role rules of the provider's own identity (exposed for tests).
std::vector<api::PolicyRule> providerRoleRules(const api::Provider& provider,
                                               const api::ProviderClass& provider_class,
                                               const std::string& workload_name,
                                               bool reads_user_data = false);

}  // namespace banlieue::roles::provider_operator
