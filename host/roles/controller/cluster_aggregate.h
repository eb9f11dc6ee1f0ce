// VSphereCluster, LibvirtCluster and ProxmoxCluster (the CAPI InfraCluster, one shape,
// host/api/infra_cluster.h): the failure domains of the Providers one selects, in CAPI
// v1beta2's list form (banlieue-spec §4.1.10), and a reconciler (one per kind) that applies the
// whole status only when it changed. Unlike the original, a paused cluster keeps its failure-domain
// list (the status is always applied whole), failure-domain names are de-duplicated across
// Providers, and providerRefs naming no Provider are reported instead of silently ignored.
#pragma once

#include "host/api/infra_cluster.h"
#include "host/api/provider.h"
#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"
#include "host/runtime/write_expectations.h"

#include <string>
#include <vector>

namespace banlieue::controller {

// The Providers `cluster` selects, in the order their failure domains are listed: its
// providerRefs in their order, else the Providers its selector matches (every Provider without
// one) by name. The names of providerRefs that match no Provider go to `missing` when given.
std::vector<const api::Provider*> selectedProviders(const api::InfraCluster& cluster,
                                                    const std::vector<api::Provider>& providers,
                                                    std::vector<std::string>* missing = nullptr);

// A failure domain a cluster advertises, and the Provider it comes from.
struct FailureDomainSource {
  const api::Provider* provider = nullptr;
  const api::ProviderFailureDomain* failure_domain = nullptr;
};

// The failure domains `cluster` advertises, in order: the selected Providers' in their order,
// a name an earlier Provider reported skipped ("provider/name" goes to `duplicates` when
// given). `missing` as for selectedProviders.
std::vector<FailureDomainSource> advertisedFailureDomains(
    const api::InfraCluster& cluster, const std::vector<api::Provider>& providers,
    std::vector<std::string>* missing = nullptr, std::vector<std::string>* duplicates = nullptr);

// Where the failure domain `name` that `cluster` advertises comes from; null members when it
// advertises none of that name.
FailureDomainSource failureDomainSource(const api::InfraCluster& cluster,
                                        const std::vector<api::Provider>& providers,
                                        const std::string& name);

// The status `cluster` should have, given the Providers of its namespace.
api::InfraClusterStatus aggregateCluster(const api::InfraCluster& cluster,
                                         const std::vector<api::Provider>& providers,
                                         const std::string& now);

class ClusterReconciler final : public runtime::Reconciler {
 public:
  ClusterReconciler(kube::KubeClient& client, kube::ResourceType type, runtime::Informer& clusters,
                    runtime::Informer& providers)
      : client_(client), type_(std::move(type)), clusters_(clusters), providers_(providers) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  kube::ResourceType type_;
  runtime::Informer& clusters_;
  runtime::Informer& providers_;
  runtime::WriteExpectations expectations_;
};

}  // namespace banlieue::controller
