// The ClusterRoles a backend brings and how they join banlieue's own (docs/adr/0043). Every
// backend, in-tree or a third party's, has the same two, named for it:
//   banlieue-provider-<backend>        its provider pods' rights on its infrastructure kinds;
//                                      labelled to aggregate into the operator, which binds it
//                                      per Provider beside banlieue-provider (what every
//                                      provider pod needs, whatever its backend)
//   banlieue-infrastructure-<backend>  creating and deleting those kinds; labelled to
//                                      aggregate into the controller (which makes them for
//                                      VMs) and the operator (which deletes them with a
//                                      Provider)
// so installing a backend is `kubectl apply` of its CRDs and these two roles: the operator's
// and the controller's ClusterRoles are aggregated by label, never re-generated.
#pragma once

#include <string>

namespace banlieue::roles {

inline constexpr const char* kAggregateToOperatorLabel = "banlieue.io/aggregate-to-operator";
inline constexpr const char* kAggregateToControllerLabel = "banlieue.io/aggregate-to-controller";
// Cluster API's convention: its manager's ClusterRole aggregates every ClusterRole with this
// label, which is how it reaches an infrastructure provider's kinds (docs/adr/0044).
inline constexpr const char* kAggregateToCapiManagerLabel = "cluster.x-k8s.io/aggregate-to-manager";
// banlieue's own infrastructure kinds (VSphereCluster, the machine templates, ...) for
// Cluster API's manager.
inline constexpr const char* kBuiltinInfrastructureClusterRole = "banlieue-infrastructure";
// What every provider pod needs beside its backend's kinds; bound per Provider.
inline constexpr const char* kProviderBaseClusterRole = "banlieue-provider";

inline std::string backendProviderClusterRole(const std::string& backend) {
  return "banlieue-provider-" + backend;
}
inline std::string backendInfrastructureClusterRole(const std::string& backend) {
  return "banlieue-infrastructure-" + backend;
}

}  // namespace banlieue::roles
