// The controller's half of docs/adr/0050 at run time: the infrastructure machines Cluster API
// makes from banlieue's templates, watched until a Provider serves them, and given one by the
// plan of capi_adoption.h. One informer and one controller per machine kind the API server
// serves, each informer limited to the copies no Provider serves yet (the cluster-name label,
// no banlieue.io/provider label): an adopted object leaves it, and the provider runtime takes
// it from there. Nothing here runs when Cluster API's Machine and Cluster kinds are not served.
#pragma once

#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/events.h"
#include "host/runtime/informer.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace banlieue::controller {

// What adoption reads besides the machines: the namespace's Providers, and each InfraCluster
// kind's informer (the aggregation's, cluster_aggregate.h) by kind.
struct CapiAdoptionInputs {
  runtime::Informer* providers = nullptr;
  std::map<std::string, runtime::Informer*> infra_clusters;
  runtime::EventRecorder* events = nullptr;  // null: no events
};

class CapiAdoption {
 public:
  // Null (said once in the log) when the API server does not serve Cluster API's Machine and
  // Cluster kinds; a Cluster API installed later takes a controller restart, as clusterctl
  // installs Cluster API before its infrastructure providers.
  static std::unique_ptr<CapiAdoption> create(kube::KubeClient& client, const std::string& ns,
                                              CapiAdoptionInputs inputs);
  ~CapiAdoption();
  CapiAdoption(const CapiAdoption&) = delete;
  CapiAdoption& operator=(const CapiAdoption&) = delete;

  // The informers, until `stop`; then the controllers once synced() (Manager::run's order).
  void runInformers(const std::atomic<bool>& stop);
  void runControllers(const std::atomic<bool>& stop);
  bool synced() const;
  // The controller of one machine kind (VSphereMachine...), for tests; null if not served.
  runtime::Controller* controller(const std::string& machine_kind);

 private:
  struct Kind;
  CapiAdoption(kube::KubeClient& client, std::string ns, CapiAdoptionInputs inputs,
               const kube::ResourceType& machines, const kube::ResourceType& clusters);
  kube::KubeClient& client_;
  std::string ns_;
  CapiAdoptionInputs inputs_;
  std::unique_ptr<runtime::Informer> machines_, clusters_;  // Cluster API's
  std::vector<std::unique_ptr<Kind>> kinds_;
};

}  // namespace banlieue::controller
