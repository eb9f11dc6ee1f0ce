// The fixture of the tests that run `banlieue provider` as its own process against the real
// apiserver with the test plugin's `faulty` variant (tests/abi/plugins/test_plugin.cc): a
// TestMachine CRD (status.capacity declared an integer, so a status the CRD refuses can be
// produced), a ProviderClass and Provider per test, the provider process, and helpers to apply
// machines and read their conditions. Used by provider_faults_test (label faults) and
// provider_protocol_test (label security).
#pragma once

#include "tests/support/background_process.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>

namespace banlieue::testing {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class ProviderProcessTest : public ::testing::Test {
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
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties: {capacity: {type: integer}}
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
                                  metrics_port_,
                                  "--leader-election-namespace",
                                  ns_->name(),
                                  "--call-timeout-seconds",
                                  "1",
                                  "--state-dir",
                                  state_dir_.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    // One pod name for every process of the test, as the kubelet restarts a crashed provider
    // container inside its pod: the restarted process holds the Lease its predecessor held at
    // once (its identity), instead of waiting out the Lease a crash never released.
    provider_ = std::make_unique<BackgroundProcess>(
        argv, std::vector<std::string>{"POD_NAME=provider-" + ns_->name()});
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
  // "-1": no /metrics; "0": /metrics on the health port (equal ports share one server).
  std::string metrics_port_ = "-1";
};

}  // namespace banlieue::testing
