// The names of Cluster API's contract that banlieue reads (docs/adr/0044, 0050), shared by the
// controller, which adopts Cluster API's machines, and the provider runtime, which serves them.
#pragma once

namespace banlieue::api {

// On every object Cluster API makes for a cluster, and on its bootstrap data Secrets.
inline constexpr const char* kClusterNameLabel = "cluster.x-k8s.io/cluster-name";
// On an object Cluster API (or clusterctl move) wants left alone.
inline constexpr const char* kPausedAnnotation = "cluster.x-k8s.io/paused";
// The type Cluster API's bootstrap providers give their data Secrets, and the keys of the
// data and its format (cloud-config or ignition).
inline constexpr const char* kBootstrapSecretType = "cluster.x-k8s.io/secret";
inline constexpr const char* kBootstrapDataKey = "value";
inline constexpr const char* kBootstrapFormatKey = "format";

}  // namespace banlieue::api
