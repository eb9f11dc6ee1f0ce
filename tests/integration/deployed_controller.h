// Other tests of the shared cluster install banlieue (bootstrap), and the node then runs a real
// cluster-wide `banlieue controller`. A test that runs controllers of its own on its VMs must
// idle it first: two controllers on one VM overwrite each other. A leader whose Lease is taken
// keeps leading until its renew deadline passes, so holding the Lease alone is not enough: its
// Deployment is scaled to zero for the test (put back by restore()) and the test goes on once
// its pods are gone. The Lease, held for an hour, keeps any controller that starts meanwhile a
// follower. Tests that use it take the CTest lock banlieue-system-roles.
#pragma once

#include "host/kube/client.h"
#include "host/runtime/object_helpers.h"
#include "tests/support/local_cluster.h"

#include <gtest/gtest.h>

#include <string>

namespace banlieue::testing {

class DeployedController {
 public:
  explicit DeployedController(LocalCluster& cluster) : cluster_(cluster) {}

  ::testing::AssertionResult idle() {
    // Through the client, not kubectl: a kubectl apply costs about 0.6 s of CPU (it reads the
    // cluster's OpenAPI documents), and every test of these binaries idles the controller.
    auto client = cluster_.client();
    if (client == nullptr) return ::testing::AssertionFailure() << "no client for the cluster";
    auto ns = client->apply(kube::resources::kNamespace, "", "banlieue-system",
                            R"({"apiVersion":"v1","kind":"Namespace",)"
                            R"("metadata":{"name":"banlieue-system"}})",
                            {.field_manager = "controller-integration-tests"});
    if (!ns.ok()) return ::testing::AssertionFailure() << ns.status().message();
    std::string now = runtime::rfc3339MicroNow();
    auto taken = client->apply(
        kube::resources::kLease, "banlieue-system", "banlieue-controller",
        R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":)"
        R"({"name":"banlieue-controller","namespace":"banlieue-system"},"spec":)"
        R"({"holderIdentity":"controller-integration-tests","leaseDurationSeconds":3600,)"
        R"("acquireTime":")" +
            now + R"(","renewTime":")" + now + R"("}})",
        {.field_manager = "controller-integration-tests", .force = true});
    if (!taken.ok()) return ::testing::AssertionFailure() << taken.status().message();
    auto replicas = cluster_.kubectl(
        "get deployment banlieue-controller -n banlieue-system -o jsonpath='{.spec.replicas}'");
    displaced_replicas_ = replicas.exit_code == 0 ? replicas.output : "";
    if (!displaced_replicas_.empty() && displaced_replicas_ != "0") {
      auto scaled =
          cluster_.kubectl("scale deployment banlieue-controller --replicas=0 -n banlieue-system");
      if (scaled.exit_code != 0) return ::testing::AssertionFailure() << scaled.output;
    }
    bool gone = LocalCluster::eventually(
        [&] {
          auto pods = cluster_.kubectl(
              "get pods -n banlieue-system -o jsonpath='{.items[*].metadata.name}' -l "
              "app.kubernetes.io/name=banlieue,app.kubernetes.io/component=controller");
          return pods.exit_code == 0 && pods.output.empty();
        },
        std::chrono::seconds(120));
    if (!gone) return ::testing::AssertionFailure() << "the deployed controller's pods did not go";
    return ::testing::AssertionSuccess();
  }

  void restore() {
    // The hour-long Lease goes with the test: left behind, it kept the next controller deployed
    // on this cluster (the e2e tier's) a follower, never Ready, for the rest of the hour.
    auto holder = cluster_.kubectl(
        "get lease banlieue-controller -n banlieue-system -o jsonpath='{.spec.holderIdentity}'");
    if (holder.exit_code == 0 && holder.output == "controller-integration-tests") {
      cluster_.kubectl("delete lease banlieue-controller -n banlieue-system --ignore-not-found");
    }
    if (displaced_replicas_.empty() || displaced_replicas_ == "0") return;
    cluster_.kubectl("scale deployment banlieue-controller --replicas=" + displaced_replicas_ +
                     " -n banlieue-system");
  }

 private:
  LocalCluster& cluster_;
  std::string displaced_replicas_;
};

}  // namespace banlieue::testing
