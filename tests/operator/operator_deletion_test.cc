// Deletion order (docs/adr/0024, issue #26): a Provider being deleted first has its
// infrastructure objects deleted and keeps its workload, which removes their backend machines,
// until none is left, saying what it waits for; a ProviderClass stays while a Provider uses it.
// The operator runs as operator_fixture.h says; the provider pods are the file plugin's image.
#include "tests/operator/operator_fixture.h"

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class OperatorDeletionTest : public OperatorTest {
 protected:
  void createMachine(const std::string& ns, const std::string& name, const std::string& provider,
                     const std::string& finalizers = "[]") {
    auto r = cluster_.apply(
        "apiVersion: infrastructure.file.example.com/v1alpha1\n"
        "kind: FileMachine\nmetadata: {name: " +
        name + ", namespace: " + ns + ", finalizers: " + finalizers +
        ", labels: {banlieue.io/provider: " + provider +
        "}}\nspec: {providerRef: {name: " + provider + "}, cpus: 1, memoryMiB: 128}\n");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::string deleting(const std::string& what) {
    return get(what,
               "{.status.conditions[?(@.type==\"Deleting\")].status}/"
               "{.status.conditions[?(@.type==\"Deleting\")].reason}: "
               "{.status.conditions[?(@.type==\"Deleting\")].message}");
  }
};

TEST_F(OperatorDeletionTest, AProviderFirstRemovesItsMachinesAndKeepsItsWorkloadUntilTheyAreGone) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  ASSERT_EQ(cluster_.kubectl("create secret generic credentials --from-literal=token=t -n " + n)
                .exit_code,
            0);
  std::string cls = createClass("drain", imageTag());
  createProvider(n, "lab", cls);
  const std::string w = workloadOf(cls, "lab");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return get("provider lab -n " + n, "{.status.conditions[?(@.type==\"Ready\")].status}") ==
               "True";
      },
      kMint))
      << cluster_.kubectl("get provider lab -n " + n + " -o yaml").output
      << cluster_.kubectl("get pods -o wide -n " + n).output << cluster_.nodeDiagnostics();
  // Two machines on the backend; the test holds the second one's deletion with a finalizer of
  // its own, so the Provider's wait can be watched.
  createMachine(n, "vm1", "lab");
  createMachine(n, "vm2", "lab", "[test.banlieue.io/hold]");
  for (const char* vm : {"vm1", "vm2"}) {
    auto ready = cluster_.kubectl(
        std::string("wait --for=condition=Ready --timeout=60s filemachine/") + vm + " -n " + n,
        90s);
    ASSERT_EQ(ready.exit_code, 0) << ready.output;
    ASSERT_TRUE(inPod(n, w, "test -f " + std::string(kBackendDir) + "/" + n + "_" + vm + ".json"));
  }

  ASSERT_EQ(cluster_.kubectl("delete provider lab --wait=false -n " + n).exit_code, 0);
  // The operator deleted both machines; the provider removed both backend machines and its
  // finalizer; the one the test holds is what the Provider now waits for.
  EXPECT_TRUE(LocalCluster::eventually([&] { return !exists("filemachine vm1 -n " + n); }, kMint));
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("filemachine vm2 -n " + n, "{.metadata.finalizers}") ==
               "[\"test.banlieue.io/hold\"]";
      },
      kMint))
      << cluster_.kubectl("get filemachine vm2 -o yaml -n " + n).output;
  for (const char* vm : {"vm1", "vm2"}) {
    EXPECT_FALSE(inPod(n, w, "test -e " + std::string(kBackendDir) + "/" + n + "_" + vm + ".json"))
        << vm;
  }
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return deleting("provider lab -n " + n) ==
               "True/WaitingForInfrastructure: waiting for 1 infrastructure object to be deleted, "
               "each after its backend machine: FileMachine vm2";
      },
      kMint))
      << deleting("provider lab -n " + n);
  EXPECT_TRUE(exists("deployment " + w + " -n " + n));
  EXPECT_THAT(
      cluster_.kubectl("get events -n " + n + " --field-selector involvedObject.name=lab").output,
      HasSubstr("WaitingForInfrastructure"));

  ASSERT_EQ(cluster_
                .kubectl("patch filemachine vm2 -n " + n +
                         " --type=merge -p '{\"metadata\":{\"finalizers\":null}}'")
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] { return !exists("provider lab -n " + n); }, kMint));
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab").empty(); }, kMint))
      << ::testing::PrintToString(labelled(n, "lab"));
}

TEST_F(OperatorDeletionTest, ADeletionNoWorkloadCanFinishSaysWhy) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  // A tag the node has no image of: the provider pod never runs.
  std::string cls = createClass("stuck", "1.0.0");
  createProvider(n, "lab", cls);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return exists("deployment " + workloadOf(cls, "lab") + " -n " + n); }, kMint));
  // A machine the provider once took (its finalizer), which only the provider releases.
  createMachine(n, "vm1", "lab", "[banlieue.io/provider-file]");

  ASSERT_EQ(cluster_.kubectl("delete provider lab --wait=false -n " + n).exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return deleting("provider lab -n " + n) ==
               "True/WaitingForInfrastructure: waiting for 1 infrastructure object to be deleted, "
               "each after its backend machine: FileMachine vm1; the provider workload has no "
               "ready replica, so nothing removes them until it runs again (see its pods)";
      },
      kMint))
      << deleting("provider lab -n " + n);
  EXPECT_FALSE(get("filemachine vm1 -n " + n, "{.metadata.deletionTimestamp}").empty());

  // Released by hand (what a user does for a backend that is gone for good): the Provider goes.
  ASSERT_EQ(cluster_
                .kubectl("patch filemachine vm1 -n " + n +
                         " --type=merge -p '{\"metadata\":{\"finalizers\":null}}'")
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] { return !exists("provider lab -n " + n); }, kMint));
}

TEST_F(OperatorDeletionTest, AClassStaysWhileAProviderUsesIt) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("inuse");
  createProvider(n, "lab", cls);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls, "{.metadata.finalizers}") ==
               "[\"banlieue.io/providerclass-in-use\"]";
      },
      kMint));
  ASSERT_EQ(cluster_.kubectl("delete providerclass " + cls + " --wait=false").exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return deleting("providerclass " + cls) ==
               "True/ProvidersRemain: 1 Provider still uses this class (" + n +
                   "/lab): the class goes once they are deleted or moved to another class";
      },
      kMint))
      << deleting("providerclass " + cls);
  // The Provider keeps (or still gets: the Deployment is the last object minted) its workload
  // meanwhile.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return exists("deployment " + workloadOf(cls, "lab") + " -n " + n); }, kMint));

  ASSERT_EQ(cluster_.kubectl("delete provider lab --timeout=60s -n " + n).exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually([&] { return !exists("providerclass " + cls); }, kMint));
}

}  // namespace
}  // namespace banlieue::testing
