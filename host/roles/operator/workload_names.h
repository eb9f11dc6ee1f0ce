// The names and labels of the objects the operator mints for a Provider (banlieue-spec 4.2,
// 3.13). Pure functions, shared by the operator's builders, its pruning and its tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace banlieue::roles::provider_operator {

inline constexpr const char* kFieldManager = "banlieue.io/operator";
inline constexpr const char* kFinalizer = "banlieue.io/provider-workload";
// The field manager of a deleting Provider's Deleting condition (docs/adr/0024).
inline constexpr const char* kDeletionFieldManager = "banlieue.io/operator-deletion";
// Held on a ProviderClass while any Provider uses it (docs/adr/0024).
inline constexpr const char* kClassFinalizer = "banlieue.io/providerclass-in-use";
inline constexpr const char* kLabelProvider = "banlieue.io/provider";
inline constexpr const char* kLabelProviderNamespace = "banlieue.io/provider-namespace";
inline constexpr const char* kLabelProviderClass = "banlieue.io/provider-class";
inline constexpr const char* kManagedBy = "banlieue-operator";

// Kubernetes names that become label values, pod-name prefixes or DNS labels must fit in 63
// characters. Longer names keep their first 54 characters (trailing '-' trimmed) and get '-'
// plus 8 hex digits of FNV-1a-32 of the *full* name, so two long names sharing a prefix still
// differ and the same input always gives the same name.
inline constexpr size_t kMaxNameLength = 63;
std::string capName(const std::string& name);

// Annotation on every minted object: a hash of what the operator applied, so a pass whose
// desired state is unchanged can skip the write (see ProviderReconciler::applyObject).
inline constexpr const char* kAppliedHashAnnotation = "banlieue.io/applied-hash";

// On the provider Deployment's pod template when the class pins its plugin
// (spec.plugin.sha256): a changed pin replaces the pods. A running process keeps the library
// it loaded; the new pods read the pin from the class and refuse any other (docs/adr/0025).
inline constexpr const char* kPluginSha256Annotation = "banlieue.io/plugin-sha256";

// banlieue-provider-<class>-<provider>: Deployment, ServiceAccount, Role, RoleBinding and the
// provider's leader-election Lease (when the workload runs in the Provider's namespace).
std::string workloadName(const std::string& provider_class, const std::string& provider);
// banlieue-provider-<class>-<providerNs>-<provider>: the ClusterRoleBinding, which shares one
// cluster-wide name space with every other namespace's Providers.
std::string clusterScopedName(const std::string& provider_class, const std::string& provider_ns,
                              const std::string& provider);
// The shared per-backend ClusterRole bootstrap installs (never created by the operator).
std::string backendClusterRoleName(const std::string& backend);
// The per-Provider ClusterRoleBinding of banlieue-provider beside the backend's one named
// `cluster_name` (docs/adr/0043).
std::string baseBindingName(const std::string& cluster_name);

// Every label a minted object carries.
std::map<std::string, std::string> workloadLabels(const std::string& provider_ns,
                                                  const std::string& provider,
                                                  const std::string& provider_class,
                                                  const std::string& backend,
                                                  const std::string& workload);
// What selects everything minted for one Provider, whatever its class was: used for pruning and
// cleanup.
std::string providerSelector(const std::string& provider_ns, const std::string& provider);

}  // namespace banlieue::roles::provider_operator
