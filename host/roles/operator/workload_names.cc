#include "host/roles/operator/workload_names.h"

#include "host/roles/common/backend_roles.h"

#include "host/common/fnv_hash.h"

#include <fmt/format.h>

namespace banlieue::roles::provider_operator {

std::string capName(const std::string& name) {
  if (name.size() <= kMaxNameLength) return name;
  constexpr size_t kKeep = kMaxNameLength - 9;  // '-' and 8 hex digits
  std::string head = name.substr(0, kKeep);
  while (!head.empty() && head.back() == '-') head.pop_back();
  return fmt::format("{}-{:08x}", head, common::fnv1a32(name));
}

std::string workloadName(const std::string& provider_class, const std::string& provider) {
  return capName("banlieue-provider-" + provider_class + "-" + provider);
}

std::string clusterScopedName(const std::string& provider_class, const std::string& provider_ns,
                              const std::string& provider) {
  return capName("banlieue-provider-" + provider_class + "-" + provider_ns + "-" + provider);
}

std::string backendClusterRoleName(const std::string& backend) {
  return backendProviderClusterRole(backend);
}

std::string baseBindingName(const std::string& cluster_name) {
  // cluster_name may already be capped; capping again keeps the result unique and short.
  return capName(cluster_name + "-base");
}

std::map<std::string, std::string> workloadLabels(const std::string& provider_ns,
                                                  const std::string& provider,
                                                  const std::string& provider_class,
                                                  const std::string& backend,
                                                  const std::string& workload) {
  return {
      {"app.kubernetes.io/name", "banlieue"},
      {"app.kubernetes.io/component", capName("provider-" + backend)},
      {"app.kubernetes.io/managed-by", kManagedBy},
      {"app.kubernetes.io/instance", workload},
      {kLabelProvider, provider},
      {kLabelProviderNamespace, provider_ns},
      {kLabelProviderClass, provider_class},
  };
}

std::string providerSelector(const std::string& provider_ns, const std::string& provider) {
  return std::string(kLabelProvider) + "=" + provider + "," + kLabelProviderNamespace + "=" +
         provider_ns;
}

}  // namespace banlieue::roles::provider_operator
