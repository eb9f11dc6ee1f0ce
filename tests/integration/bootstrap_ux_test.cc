// `banlieue bootstrap operator` against the real local cluster (issue #22): it waits for the
// Deployments it applied to roll out, printing progress and what to do next; --no-wait returns
// once they are applied; a rollout that cannot finish ends in an error that names the
// Deployment and why its pod is not ready.
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace banlieue {
namespace {

using testing::CommandResult;
using testing::LocalCluster;
using testing::runCommand;
using testing::shellQuote;
namespace fs = std::filesystem;

const char* const kRoles[] = {"banlieue-controller", "banlieue-operator", "banlieue-imagebuilder"};
// No registry serves it and the node does not hold it: its pods never start.
const char* const kMissingImage = "localhost/banlieue-ux-no-such-image:0";

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class BootstrapUxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // No plugins: no ProviderClass, which this test does not need.
    plugins_ = fs::temp_directory_path() / ("banlieue-ux-plugins-" + std::to_string(::getpid()));
    fs::create_directories(plugins_);
    ::chmod(plugins_.c_str(), 0755);
    // Fresh Deployments, so the rollout is still to come when bootstrap applies them.
    removeRoles();
  }
  void TearDown() override {
    fs::remove_all(plugins_);
    // Leave no role running cluster-wide for the tests that come after.
    removeRoles();
  }

  static void removeRoles() {
    std::string names;
    for (const auto* role : kRoles) names += std::string(" ") + role;
    LocalCluster::shared().kubectl(
        "delete deployment" + names + " -n banlieue-system --ignore-not-found --wait=true",
        std::chrono::seconds(90));
  }

  CommandResult bootstrap(const std::string& ns, const std::string& extra) const {
    return runCommand(std::string(BANLIEUE_BINARY) + " bootstrap operator --plugin-dir " +
                          shellQuote(plugins_.string()) + " --userdata-namespace " + ns +
                          " --kubeconfig " +
                          shellQuote(LocalCluster::shared().kubeconfig().string()) + " " + extra,
                      std::chrono::seconds(300));
  }

  static std::string readiness(const std::string& role) {
    return LocalCluster::shared()
        .kubectl("get deployment " + role +
                 " -n banlieue-system -o jsonpath='{.status.updatedReplicas}/"
                 "{.status.readyReplicas}/{.status.availableReplicas}'")
        .output;
  }

  fs::path plugins_;
};

TEST_F(BootstrapUxTest, WaitsForTheRolloutWithProgressAndSaysWhatIsNext) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto r = bootstrap(ns.name(), "--wait-timeout 240");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Every role is waited for, the imagebuilder too, with or without kairos-operator's CRD.
  for (const auto* role : kRoles) {
    const std::string name = std::string("banlieue-system/") + role;
    EXPECT_TRUE(contains(r.output, "deployment " + name + " rolled out: 1/1 ready")) << r.output;
    // Rolled out when bootstrap returned, not some time later.
    EXPECT_EQ(readiness(role), "1/1/1") << role << "\n" << r.output;
  }
  // This bootstrap changed the Deployments (the namespace's userData grant), so the first one
  // waited for was still rolling out: progress was shown. The Deployments are waited for one
  // after another, so a later one may have finished meanwhile and show only "rolled out" (the
  // fresh CI run of 2026-12-02 saw exactly that for the operator).
  EXPECT_TRUE(contains(r.output, "waiting for deployment banlieue-system/")) << r.output;
  EXPECT_TRUE(contains(r.output, "banlieue is running in namespace banlieue-system")) << r.output;
  EXPECT_TRUE(contains(r.output, "kubectl get virtualmachines.banlieue.io")) << r.output;
}

TEST_F(BootstrapUxTest, NoWaitReturnsOnceApplied) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  // Pods that can never start: a bootstrap that waited would fail.
  auto r = bootstrap(ns.name(), std::string("--no-wait --image ") + kMissingImage);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "not waiting for the rollout (--no-wait)")) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "kubectl -n banlieue-system rollout status deployment/banlieue-controller"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "waiting for deployment")) << r.output;
  EXPECT_TRUE(contains(r.output, "kubectl get virtualmachines.banlieue.io")) << r.output;
  EXPECT_NE(readiness("banlieue-controller"), "1/1/1");
}

TEST_F(BootstrapUxTest, ATimeoutNamesTheDeploymentAndWhyItsPodIsNotReady) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto r = bootstrap(ns.name(), std::string("--wait-timeout 20 --image ") + kMissingImage);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "deployment banlieue-system/banlieue-controller did not roll out within "
                       "20s: 0/1 ready"))
      << r.output;
  // Why: the pod's container waits for an image no registry serves (ErrImagePull, then
  // ImagePullBackOff; ContainerCreating at first on a slow node). The Deployment's own
  // Available condition says nothing: maxUnavailable 100% makes zero ready replicas enough.
  EXPECT_TRUE(contains(r.output, "; pod banlieue-controller-")) << r.output;
  EXPECT_TRUE(contains(r.output, ": container controller waiting: ")) << r.output;
  EXPECT_FALSE(contains(r.output, "Next (")) << r.output;
}

}  // namespace
}  // namespace banlieue
