// `banlieue provider` as its own process against the real apiserver, with the test plugin's
// `faulty` variant (a slow, hanging or crashing reconcile for the objects that ask for one):
//  - a stopping provider keeps its Lease until its in-flight plugin call has returned;
//  - a call stuck past its deadline plus the grace turns /healthz red, naming slot and object;
//  - after the plugin crashed on one object, the restarted provider holds that object back with
//    Ready=False/PluginCrashed and an event, and serves the others.
#include "tests/support/background_process.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

class ProviderFaultsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& cluster = LocalCluster::shared();
    auto crd = cluster.apply(R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: testmachines.infrastructure.test.banlieue.io}
spec:
  group: infrastructure.test.banlieue.io
  names: {kind: TestMachine, listKind: TestMachineList, plural: testmachines, singular: testmachine}
  scope: Namespaced
  versions:
  - name: v1beta2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)");
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
    ASSERT_EQ(cluster
                  .kubectl("wait --for=condition=Established --timeout=60s "
                           "crd/testmachines.infrastructure.test.banlieue.io")
                  .exit_code,
              0);
  }

  void SetUp() override {
    ns_ = std::make_unique<LocalCluster::TestNamespace>(cluster_);
    class_ = "faulty-" + ns_->name();
    state_dir_ = fs::temp_directory_path() / ("banlieue-faults-" + ns_->name());
    fs::create_directories(state_dir_);
    auto applied = cluster_.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: )" + class_ + R"(}
spec:
  backend: testprov
  plugin: {path: faulty}
---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: tests, namespace: )" +
                                  ns_->name() +
                                  R"(}
spec:
  providerClassRef: {name: )" + class_ +
                                  R"(}
  connection: {endpoint: "test://faults"}
)");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }

  void TearDown() override {
    provider_.reset();
    // No wait: an operator elsewhere in the cluster holds the class's in-use finalizer until
    // this test's namespace and its Provider are gone (ADR 0024).
    cluster_.kubectl("delete providerclass " + class_ + " --ignore-not-found --wait=false");
    std::error_code ec;
    fs::remove_all(state_dir_, ec);
  }

  void startProvider(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{BANLIEUE_BINARY,
                                  "provider",
                                  "testprov",
                                  "--provider",
                                  ns_->name() + "/tests",
                                  "--plugin-dir",
                                  TEST_PLUGIN_ROOT,
                                  "--kubeconfig",
                                  cluster_.kubeconfig().string(),
                                  "--health-port",
                                  "0",
                                  "--metrics-port",
                                  "-1",
                                  "--leader-election-namespace",
                                  ns_->name(),
                                  "--call-timeout-seconds",
                                  "1",
                                  "--state-dir",
                                  state_dir_.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    provider_ = std::make_unique<BackgroundProcess>(argv);
    ASSERT_TRUE(provider_->started());
  }

  void applyMachine(const std::string& name, const std::string& fault) {
    auto applied = cluster_.apply(R"(apiVersion: infrastructure.test.banlieue.io/v1beta2
kind: TestMachine
metadata:
  name: )" + name + R"(
  namespace: )" + ns_->name() + R"(
  labels: {banlieue.io/provider: tests}
spec:
  providerRef: {name: tests}
)" + (fault.empty() ? "" : "  " + fault + "\n"));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }

  std::string jsonpath(const std::string& object, const std::string& path) {
    return cluster_.kubectl("get " + object + " -n " + ns_->name() + " -o jsonpath='" + path + "'")
        .output;
  }

  std::string readyReason(const std::string& machine) {
    return jsonpath("testmachine " + machine, "{.status.conditions[?(@.type==\"Ready\")].reason}");
  }

  bool outputHas(const std::string& text) {
    return provider_->output().find(text) != std::string::npos;
  }

  int healthPort() {
    int port = -1;
    LocalCluster::eventually([&] {
      std::smatch m;
      std::string out = provider_->output();
      if (!std::regex_search(out, m, std::regex(R"(health endpoints on [^:\s]+:(\d+))")))
        return false;
      port = std::stoi(m[1]);
      return true;
    });
    return port;
  }

  std::string diagnostics() {
    return "\n--- provider output ---\n" + (provider_ ? provider_->output() : "") +
           "\n--- objects ---\n" +
           cluster_.kubectl("get providers,testmachines,leases -n " + ns_->name() + " -o yaml")
               .output;
  }

  std::string lease() { return "lease/banlieue-provider-" + class_ + "-tests"; }

  LocalCluster& cluster_ = LocalCluster::shared();
  std::unique_ptr<LocalCluster::TestNamespace> ns_;
  std::string class_;
  fs::path state_dir_;
  std::unique_ptr<BackgroundProcess> provider_;
};

TEST_F(ProviderFaultsTest, AStoppingProviderKeepsItsLeaseUntilItsPluginCallsReturn) {
  startProvider();
  applyMachine("slow", "slowSeconds: 4");
  ASSERT_TRUE(LocalCluster::eventually([&] { return outputHas("slow reconcile of"); }, 60s))
      << diagnostics();
  ASSERT_EQ(::kill(provider_->pid(), SIGTERM), 0);
  // The Lease is released only once the call (which ignores cancellation) has returned: the
  // host logs its late return before anything else happens.
  bool released = LocalCluster::eventually(
      [&] {
        if (jsonpath(lease(), "{.spec.holderIdentity}").empty()) {
          EXPECT_TRUE(outputHas("ms after its 1000 ms deadline"))
              << "the Lease was released while a plugin call was still running" << diagnostics();
          return true;
        }
        return provider_->exited();
      },
      60s);
  EXPECT_TRUE(released) << diagnostics();
  int code = -1;
  EXPECT_TRUE(LocalCluster::eventually([&] { return provider_->exited(&code); }, 30s));
  EXPECT_EQ(code, 0) << diagnostics();
  EXPECT_EQ(jsonpath(lease(), "{.spec.holderIdentity}"), "") << diagnostics();
}

TEST_F(ProviderFaultsTest, ACallStuckPastDeadlineAndGraceFailsTheLivenessCheck) {
  startProvider({"--plugin-hang-grace-seconds", "2"});
  int port = healthPort();
  ASSERT_GT(port, 0) << diagnostics();
  std::string healthz =
      "curl -s -w ' %{http_code}' http://127.0.0.1:" + std::to_string(port) + "/healthz";
  EXPECT_THAT(runCommand(healthz).output, HasSubstr(" 200"));
  applyMachine("stuck", "hang: true");
  std::string answer;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        answer = runCommand(healthz).output;
        return answer.find(" 500") != std::string::npos;
      },
      60s))
      << answer << diagnostics();
  EXPECT_THAT(answer, HasSubstr("plugin-calls"));
  EXPECT_THAT(answer, HasSubstr("reconcile of TestMachine " + ns_->name() + "/stuck"));
  provider_->stop(SIGKILL);  // a hung call never returns; the kubelet would kill it the same way
}

TEST_F(ProviderFaultsTest, AnObjectThePluginCrashesOnIsHeldBackAndTheOthersProceed) {
  startProvider({"--plugin-crash-backoff-seconds", "600"});
  applyMachine("good", "");
  ASSERT_TRUE(LocalCluster::eventually([&] { return readyReason("good") == "Provisioned"; }, 60s))
      << diagnostics();
  applyMachine("bad", "crash: true");
  int code = -1;
  ASSERT_TRUE(LocalCluster::eventually([&] { return provider_->exited(&code); }, 60s))
      << diagnostics();
  EXPECT_EQ(code, 128 + SIGSEGV) << diagnostics();

  // What the kubelet does: start it again, with the same state directory.
  applyMachine("later", "");
  startProvider({"--plugin-crash-backoff-seconds", "600"});
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyReason("bad") == "PluginCrashed"; }, 60s))
      << diagnostics();
  EXPECT_THAT(jsonpath("testmachine bad", "{.status.conditions[?(@.type==\"Ready\")].message}"),
              HasSubstr("reconcile of TestMachine " + ns_->name() + "/bad"));
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyReason("later") == "Provisioned"; }, 60s))
      << diagnostics();
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return cluster_
               .kubectl("get events -n " + ns_->name() +
                        " --field-selector reason=PluginCrashed,involvedObject.name=bad -o name")
               .output.find("event") != std::string::npos;
  })) << diagnostics();
  EXPECT_FALSE(provider_->exited()) << "crashed again on the held-back object" << diagnostics();
}

}  // namespace
}  // namespace banlieue::testing
