// A Provider's workload after kube-controller-manager's garbage collector missed its old
// Deployment's deletion (issue #26, found by the chaos run: after an apiserver restart the old
// ReplicaSet and its pod stayed for good beside the recreated Deployment's, competing for the
// Provider's Lease). The operator's prune deletes a ReplicaSet whose controlling Deployment is
// not one it keeps. Labels: unit;operator;chaos.
#include "host/roles/operator/workload.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace banlieue::roles::provider_operator {
namespace {

using ::testing::ElementsAre;

std::string replicaSet(const std::string& ns, const std::string& name, const std::string& kind,
                       const std::string& owner_uid, bool controller = true) {
  return R"({"metadata":{"namespace":")" + ns + R"(","name":")" + name +
         R"(","ownerReferences":[{"apiVersion":"apps/v1","kind":")" + kind +
         R"(","name":"banlieue-provider-libvirt-host1","uid":")" + owner_uid +
         R"(","controller":)" + (controller ? "true" : "false") + "}]}}";
}

TEST(StaleReplicaSetsTest, OnlyReplicaSetsOfADeploymentThatIsGoneAreStale) {
  auto list = sdk::json::parse(
      R"({"items":[)" + replicaSet("default", "current-abc", "Deployment", "uid-new") + "," +
          replicaSet("default", "old-rollout-def", "Deployment", "uid-new") + "," +
          replicaSet("default", "left-behind-123", "Deployment", "uid-deleted") + "," +
          replicaSet("default", "not-controller", "Deployment", "uid-deleted", false) + "," +
          replicaSet("default", "someone-elses", "StatefulSet", "uid-other") + "," +
          R"({"metadata":{"namespace":"default","name":"orphan"}}]})",
      "replicasets");
  EXPECT_THAT(staleReplicaSets(list, {"uid-new"}), ElementsAre("default/left-behind-123"));
  // During teardown no Deployment is kept: every one of the Provider's ReplicaSets goes.
  EXPECT_THAT(
      staleReplicaSets(list, {}),
      ElementsAre("default/current-abc", "default/old-rollout-def", "default/left-behind-123"));
  EXPECT_TRUE(staleReplicaSets(sdk::json::parse("{}", "empty"), {}).empty());
}

}  // namespace
}  // namespace banlieue::roles::provider_operator
