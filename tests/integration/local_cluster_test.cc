// Proves the local control plane is a real Kubernetes API: the semantics banlieue relies on
// (server-side apply ownership, watch, finalizers, garbage collection, RBAC), observed with
// kubectl as a user would.
#include "tests/support/local_cluster.h"
#include "tests/support/stuck_namespaces.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;

class LocalClusterTest : public ::testing::Test {
 protected:
  LocalCluster& cluster_ = LocalCluster::shared();
};

TEST_F(LocalClusterTest, ApiserverIsReadyAndKubectlTalksToIt) {
  auto ready = cluster_.kubectl("get --raw /readyz");
  EXPECT_EQ(ready.exit_code, 0) << ready.output;
  EXPECT_EQ(ready.output, "ok");
  auto version = cluster_.kubectl("version -o json");
  EXPECT_THAT(version.output, HasSubstr(R"("gitVersion": "v1.20.2)"));
}

TEST_F(LocalClusterTest, TokenIdentityWorksToo) {
  auto pods = cluster_.kubectl("--context token get namespaces -o name");
  EXPECT_EQ(pods.exit_code, 0) << pods.output;
  EXPECT_THAT(pods.output, HasSubstr("namespace/default"));
}

TEST_F(LocalClusterTest, ServerSideApplyTracksOwnersAndReportsConflicts) {
  LocalCluster::TestNamespace ns(cluster_);
  std::string cm =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: " + ns.name() +
      "\ndata:\n  size: \"1\"\n";
  auto first = cluster_.apply(cm, "--server-side --field-manager=alpha");
  ASSERT_EQ(first.exit_code, 0) << first.output;

  std::string other = cm;
  other.replace(other.find("\"1\""), 3, "\"2\"");
  auto conflict = cluster_.apply(other, "--server-side --field-manager=beta");
  EXPECT_NE(conflict.exit_code, 0);
  EXPECT_THAT(conflict.output, HasSubstr("conflict"));
  EXPECT_THAT(conflict.output, HasSubstr("alpha"));

  auto forced = cluster_.apply(other, "--server-side --field-manager=beta --force-conflicts");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  auto managers =
      cluster_.kubectl("get configmap shared -n " + ns.name() +
                       " --show-managed-fields -o jsonpath='{.metadata.managedFields[*].manager}'");
  EXPECT_THAT(managers.output, HasSubstr("beta"));
  auto value =
      cluster_.kubectl("get configmap shared -n " + ns.name() + " -o jsonpath='{.data.size}'");
  EXPECT_EQ(value.output, "2");
}

TEST_F(LocalClusterTest, WatchDeliversAddedModifiedDeleted) {
  LocalCluster::TestNamespace ns(cluster_);
  auto log = std::filesystem::temp_directory_path() / (ns.name() + "-watch.json");
  // The watch runs in the background and writes its events to a file we poll.
  std::string watch = LocalCluster::kubectlBinary() + " --kubeconfig " +
                      shellQuote(cluster_.kubeconfig().string()) + " get configmaps -n " +
                      ns.name() + " --watch --output-watch-events -o json > " +
                      shellQuote(log.string()) + " 2>&1";
  auto watcher = runCommand("(timeout 60 " + watch + " &) ; sleep 0");
  ASSERT_EQ(watcher.exit_code, 0);
  auto contents = [&] {
    std::ifstream in(log);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  // The watch is established once it reports a marker object (listed or added).
  ASSERT_EQ(cluster_.kubectl("create configmap marker -n " + ns.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return contents().find(R"("name":"marker")") != std::string::npos;
  })) << contents();

  ASSERT_EQ(cluster_.kubectl("create configmap watched -n " + ns.name() + " --from-literal=a=1")
                .exit_code,
            0);
  ASSERT_EQ(cluster_
                .kubectl("patch configmap watched -n " + ns.name() +
                         R"( --type merge -p '{"data":{"a":"2"}}')")
                .exit_code,
            0);
  ASSERT_EQ(cluster_.kubectl("delete configmap watched -n " + ns.name()).exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return contents().find(R"("type":"DELETED")") != std::string::npos;
  })) << contents();
  // One JSON event per line; keep the types of the events about "watched", in order.
  std::vector<std::string> types;
  std::istringstream lines(contents());
  for (std::string line; std::getline(lines, line);) {
    if (line.find(R"("name":"watched")") == std::string::npos) continue;
    for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
      if (line.rfind(std::string(R"({"type":")") + type + R"(")", 0) == 0) types.emplace_back(type);
    }
  }
  EXPECT_THAT(types, ::testing::ElementsAre("ADDED", "MODIFIED", "DELETED")) << contents();
  runCommand("pkill -f " + shellQuote("--output-watch-events -o json > " + log.string()));
  std::filesystem::remove(log);
}

TEST_F(LocalClusterTest, FinalizerBlocksDeletionUntilRemoved) {
  LocalCluster::TestNamespace ns(cluster_);
  auto created = cluster_.apply(
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guarded\n  namespace: " + ns.name() +
      "\n  finalizers: [banlieue.io/test]\n");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  ASSERT_EQ(
      cluster_.kubectl("delete configmap guarded -n " + ns.name() + " --wait=false").exit_code, 0);
  auto pending = cluster_.kubectl("get configmap guarded -n " + ns.name() +
                                  " -o jsonpath='{.metadata.deletionTimestamp}'");
  EXPECT_EQ(pending.exit_code, 0) << "the finalizer must keep the object";
  EXPECT_FALSE(pending.output.empty()) << "deletionTimestamp must be set";
  auto released = cluster_.kubectl("patch configmap guarded -n " + ns.name() +
                                   R"( --type merge -p '{"metadata":{"finalizers":null}}')");
  ASSERT_EQ(released.exit_code, 0) << released.output;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return cluster_.kubectl("get configmap guarded -n " + ns.name()).exit_code != 0; }));
}

// The sweep every test process runs once (stuck_namespaces.h): in a namespace Terminating long
// enough it removes banlieue's finalizers and keeps everyone else's; a younger one it leaves.
TEST_F(LocalClusterTest, TheSweepRemovesOnlyBanlieueFinalizersFromANamespaceStuckTerminating) {
  LocalCluster::TestNamespace ns(cluster_);
  auto created = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachineClaim\nmetadata:\n  name: held\n"
      "  namespace: " +
      ns.name() +
      "\n  finalizers: [banlieue.io/sweep-test, example.com/other, banlieue.io/another]\n"
      "spec:\n  poolRef: {name: none}\n  subject: {id: one, issuer: test}\n");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  ASSERT_EQ(cluster_.kubectl("delete namespace " + ns.name() + " --wait=false").exit_code, 0);
  auto finalizers = [&] {
    return cluster_
        .kubectl("get virtualmachineclaim held -n " + ns.name() +
                 " -o jsonpath='{.metadata.finalizers}'")
        .output;
  };
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return !cluster_
                .kubectl("get namespace " + ns.name() +
                         " -o jsonpath='{.metadata.deletionTimestamp}'")
                .output.empty();
  }));
  auto client = cluster_.client();
  ASSERT_NE(client, nullptr);

  auto young = sweepStuckNamespaces(*client, std::chrono::hours(1), ns.name());
  EXPECT_EQ(young.namespaces, 0);
  EXPECT_THAT(finalizers(), HasSubstr("banlieue.io/sweep-test"));

  auto swept = sweepStuckNamespaces(*client, std::chrono::seconds(0), ns.name());
  EXPECT_EQ(swept.namespaces, 1);
  EXPECT_EQ(swept.objects, 1);
  EXPECT_EQ(finalizers(), R"(["example.com/other"])");

  // The finalizer that is not banlieue's is this test's to remove; then the namespace goes.
  ASSERT_EQ(cluster_
                .kubectl("patch virtualmachineclaim held -n " + ns.name() +
                         R"( --type merge -p '{"metadata":{"finalizers":null}}')")
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return cluster_.kubectl("get namespace " + ns.name()).exit_code != 0; },
      std::chrono::seconds(60)));
}

TEST_F(LocalClusterTest, GarbageCollectorDeletesDependents) {
  LocalCluster::TestNamespace ns(cluster_);
  ASSERT_EQ(cluster_.kubectl("create configmap owner -n " + ns.name()).exit_code, 0);
  auto uid =
      cluster_.kubectl("get configmap owner -n " + ns.name() + " -o jsonpath='{.metadata.uid}'");
  ASSERT_EQ(uid.exit_code, 0);
  auto dependent = cluster_.apply(
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dependent\n  namespace: " + ns.name() +
      "\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: owner\n    uid: " +
      uid.output + "\n");
  ASSERT_EQ(dependent.exit_code, 0) << dependent.output;
  ASSERT_EQ(cluster_.kubectl("delete configmap owner -n " + ns.name()).exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return cluster_.kubectl("get configmap dependent -n " + ns.name()).exit_code != 0; },
      std::chrono::seconds(60)))
      << "kube-controller-manager's garbage collector must delete the dependent";
}

TEST_F(LocalClusterTest, RbacIsEnforced) {
  LocalCluster::TestNamespace ns(cluster_);
  std::string sa = "system:serviceaccount:" + ns.name() + ":default";
  auto denied = cluster_.kubectl("get secrets -n " + ns.name() + " --as=" + sa);
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_THAT(denied.output, HasSubstr("forbidden"));
  auto can = cluster_.kubectl("auth can-i list secrets -n " + ns.name() + " --as=" + sa);
  EXPECT_EQ(can.output.substr(0, 2), "no") << can.output;
}

TEST_F(LocalClusterTest, KubectlListsWhatWasCreated) {
  LocalCluster::TestNamespace ns(cluster_);
  for (const char* name : {"one", "two", "three"}) {
    ASSERT_EQ(
        cluster_.kubectl("create configmap " + std::string(name) + " -n " + ns.name()).exit_code,
        0);
  }
  auto listed = cluster_.kubectl("get configmaps -n " + ns.name() + " -o name");
  EXPECT_THAT(listed.output, HasSubstr("configmap/one"));
  EXPECT_THAT(listed.output, HasSubstr("configmap/two"));
  EXPECT_THAT(listed.output, HasSubstr("configmap/three"));
}

}  // namespace
}  // namespace banlieue::testing
