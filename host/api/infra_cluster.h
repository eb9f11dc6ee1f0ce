// The CAPI v1beta2 InfraCluster of every in-tree backend: VSphereCluster, LibvirtCluster and
// ProxmoxCluster share one shape (docs/adr/0046). Each aggregates the failure domains of the
// Providers it selects in its namespace, in CAPI's list form; Cluster API spreads Machines
// over them.
#pragma once

#include "host/api/common.h"
#include "host/api/kinds.h"

#include <optional>
#include <string>
#include <vector>

namespace banlieue::api {

struct InfraClusterSpec {
  std::optional<ApiEndpoint> control_plane_endpoint;
  std::optional<LabelSelector> provider_selector;
  std::vector<LocalObjectReference> provider_refs;
  std::optional<LabelSelector> control_plane_failure_domain_selector;
  bool paused = false;
  static const Fields<InfraClusterSpec>& describe();
};

struct InfraClusterStatus {
  std::optional<InitializationStatus> initialization;
  std::optional<ApiEndpoint> control_plane_endpoint;
  std::vector<ClusterFailureDomain> failure_domains;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  static const Fields<InfraClusterStatus>& describe();
};

using InfraCluster = Resource<InfraClusterSpec, InfraClusterStatus>;

// The InfraCluster kinds banlieue serves itself, one per in-tree backend.
inline constexpr const char* kInfraClusterKinds[] = {"VSphereCluster", "LibvirtCluster",
                                                     "ProxmoxCluster"};

// The CRD description of one backend's InfraCluster kind (`backend` as users name it:
// "vSphere", "libvirt", "Proxmox VE").
KindInfo infraClusterKind(const char* kind, const char* plural, const char* short_name,
                          const char* backend);

}  // namespace banlieue::api
