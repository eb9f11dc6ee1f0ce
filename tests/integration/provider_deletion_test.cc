// A provider that starts while its Provider is being deleted still connects to its backend, so
// the infrastructure objects it must finalize go (docs/adr/0024). Found by the chaos run: a
// provider pod killed during a Provider deletion came back, never connected, and the Provider,
// its machine and the VM stayed Terminating. The provider runs as a child process with the file
// plugin. Label `chaos`.
#include "tests/support/background_process.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(ProviderDeletionTest, AProviderStartedDuringItsProvidersDeletionStillFinalizesTheMachines) {
  auto& cluster = LocalCluster::shared();
  auto crd = cluster.installCrd(std::string(PLUGIN_DIR) + "/file/crds/filemachines.yaml",
                                "filemachines.infrastructure.file.example.com");
  ASSERT_EQ(crd.exit_code, 0) << crd.output;
  LocalCluster::TestNamespace ns(cluster);
  const std::string n = ns.name();
  const std::string cls = "file-" + n;
  const fs::path backend = fs::temp_directory_path() / ("banlieue-file-" + n);
  fs::create_directories(backend);
  // The test's own finalizer keeps the Provider Terminating while the provider runs.
  auto applied = cluster.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\nmetadata: {name: " + cls +
      "}\nspec:\n  backend: file\n  plugin: {path: file}\n---\n"
      "apiVersion: banlieue.io/v1alpha1\nkind: Provider\nmetadata: {name: files, namespace: " +
      n + ", finalizers: [test.banlieue.io/hold]}\nspec:\n  providerClassRef: {name: " + cls +
      "}\n  connection: {endpoint: \"file://" + backend.string() +
      "\"}\n---\n"
      "apiVersion: infrastructure.file.example.com/v1alpha1\nkind: FileMachine\nmetadata: "
      "{name: vm1, namespace: " +
      n +
      ", labels: {banlieue.io/provider: files}}\nspec: {providerRef: {name: files}, cpus: 1, "
      "memoryMiB: 128}\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto provider = [&] {
    return std::make_unique<BackgroundProcess>(std::vector<std::string>{
        BANLIEUE_BINARY, "provider", "file", "--provider", n + "/files", "--plugin-dir", PLUGIN_DIR,
        "--kubeconfig", cluster.kubeconfig().string(), "--health-port", "0", "--metrics-port", "-1",
        "--leader-election-namespace", n});
  };
  const fs::path vm_file = backend / (n + "_vm1.json");
  {
    auto first = provider();
    ASSERT_TRUE(LocalCluster::eventually([&] { return fs::exists(vm_file); }, 60s))
        << first->output();
    ASSERT_EQ(
        cluster.kubectl("wait --for=condition=Ready --timeout=60s filemachine/vm1 -n " + n, 90s)
            .exit_code,
        0)
        << first->output();
  }  // killed: no provider runs while the deletions start
  ASSERT_EQ(cluster.kubectl("delete provider files --wait=false -n " + n).exit_code, 0);
  ASSERT_EQ(cluster.kubectl("delete filemachine vm1 --wait=false -n " + n).exit_code, 0);

  auto second = provider();
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return cluster.kubectl("get filemachine vm1 -n " + n).exit_code != 0; }, 60s))
      << second->output() << cluster.kubectl("get filemachine vm1 -o yaml -n " + n).output;
  EXPECT_FALSE(fs::exists(vm_file)) << "the backend machine was left behind";

  second.reset();
  cluster.kubectl("patch provider files -n " + n +
                  " --type=merge -p '{\"metadata\":{\"finalizers\":null}}'");
  cluster.kubectl("delete providerclass " + cls + " --ignore-not-found --wait=false");
  std::error_code ec;
  fs::remove_all(backend, ec);
}

}  // namespace
}  // namespace banlieue::testing
