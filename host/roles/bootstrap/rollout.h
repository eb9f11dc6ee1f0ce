// Waiting for the Deployments bootstrap applied to roll out, by the rules of `kubectl rollout
// status`: the Deployment controller has observed the current generation, every replica runs
// the current template and is available, and no old replica is left.
#pragma once

#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace banlieue::roles::bootstrap {

// Where one Deployment's rollout stands, read from its object.
struct RolloutStatus {
  bool done = false;
  // Progressing=False with reason ProgressDeadlineExceeded: the Deployment controller gave up.
  bool failed = false;
  // For a person: "0/1 ready", "1/1 ready, 1 old replica pending termination",
  // "spec change not yet observed".
  std::string progress;
  // Its conditions that are not True, "Available=False (MinimumReplicasUnavailable: ...)";
  // empty when there are none.
  std::string unready;
};
RolloutStatus rolloutStatus(const rapidjson::Value& deployment);

struct DeploymentRef {
  std::string ns;
  std::string name;
  std::string display() const { return ns + "/" + name; }
};

// The Deployments among `objects`, in their order.
std::vector<DeploymentRef> deploymentsOf(const std::vector<rapidjson::Document>& objects);

// Watches each Deployment in turn until it has rolled out, writing a line to `progress` each
// time its progress changes ("waiting for deployment ns/name: 0/1 ready") and one when it is
// done. `timeout` bounds the whole wait. Errors name the Deployment: DeadlineExceeded
// (reason RolloutTimeout) with its progress, its unready conditions and why its first unready
// pod is not ready; FailedPrecondition (ProgressDeadlineExceeded) as soon as the Deployment
// controller gives up; NotFound when it does not exist or is deleted meanwhile.
Status waitForRollouts(kube::KubeClient& client, const std::vector<DeploymentRef>& deployments,
                       std::chrono::seconds timeout, std::ostream& progress);

}  // namespace banlieue::roles::bootstrap
