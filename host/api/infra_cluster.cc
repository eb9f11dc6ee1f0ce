#include "host/api/infra_cluster.h"

#include "host/api/declare.h"
#include "host/api/infra_fields.h"

#include <string>

namespace banlieue::api {

const Fields<InfraClusterSpec>& InfraClusterSpec::describe() {
  using T = InfraClusterSpec;
  static const Fields<T> f =
      Fields<T>("A CAPI InfraCluster spanning the failure domains of one or more Providers")
          .field("controlPlaneEndpoint", &T::control_plane_endpoint,
                 {.description = "The workload cluster's API endpoint, set by the user or CAPI"})
          .field("providerSelector", &T::provider_selector,
                 {.description = "Labels of the Providers (same namespace) to aggregate"})
          .field("providerRefs", &T::provider_refs,
                 {.description = "Providers to aggregate; wins over providerSelector",
                  .map_keys = {"name"}})
          .field("controlPlaneFailureDomainSelector", &T::control_plane_failure_domain_selector,
                 {.description = "Labels of the failure domains marked for control-plane "
                                 "machines; all when absent"})
          .field("paused", &T::paused, {.description = "Stop reconciling this cluster"});
  return f;
}

const Fields<InfraClusterStatus>& InfraClusterStatus::describe() {
  using T = InfraClusterStatus;
  static const Fields<T> f =
      Fields<T>("The aggregated failure domains, written by banlieue.io/controller")
          .field("initialization", &T::initialization, infra::initialization())
          .field("controlPlaneEndpoint", &T::control_plane_endpoint,
                 {.description = "The endpoint as published to CAPI"})
          .field("failureDomains", &T::failure_domains,
                 {.description = "Failure domains of every aggregated Provider (CAPI contract)",
                  .map_keys = {"name"}})
          .field("conditions", &T::conditions, conditionsSpec("Ready and the aggregation's state"))
          .field("observedGeneration", &T::observed_generation, infra::observedGeneration());
  return f;
}

BANLIEUE_API_CODEC(InfraCluster);

KindInfo infraClusterKind(const char* kind, const char* plural, const char* short_name,
                          const char* backend) {
  return KindInfo{
      .group = kInfraGroup,
      .version = kInfraVersion,
      .kind = kind,
      .plural = plural,
      .short_names = {short_name},
      .description = std::string("A CAPI v1beta2 InfraCluster over the failure domains of ") +
                     backend + " Providers",
      .columns = {{"Provisioned", "boolean", ".status.initialization.provisioned"},
                  {"Endpoint", "string", ".status.controlPlaneEndpoint.host", "", 1},
                  readyColumn(),
                  ageColumn()},
      .spec_schema = &schemaOf<InfraClusterSpec>,
      .status_schema = &schemaOf<InfraClusterStatus>,
      .crd_labels = infra::crdLabels()};
}

}  // namespace banlieue::api
