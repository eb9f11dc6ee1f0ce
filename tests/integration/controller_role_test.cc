// `banlieue controller` as a process against the real apiserver: it takes the Lease in
// --leader-election-namespace, answers /readyz only once its caches are synced and it leads,
// does its job (a VM gets its infra CR), and on SIGTERM releases the Lease and exits 0.
#include "host/kube/client.h"
#include "tests/support/build_paths.h"
#include "tests/support/free_port.h"
#include "tests/support/local_cluster.h"

#include <banlieue/sdk/json.h>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace banlieue::testing {
namespace {

using namespace std::chrono_literals;
namespace json = sdk::json;

TEST(ControllerRoleTest, LeadsServesReadyzReconcilesAndReleasesTheLeaseOnSigterm) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  int port = freePort();
  auto log = std::filesystem::temp_directory_path() / ("controller-" + ns.name() + ".log");

  std::vector<std::string> args{BANLIEUE_BINARY,
                                "controller",
                                "--kubeconfig",
                                cluster.kubeconfig().string(),
                                "--leader-election-namespace",
                                ns.name(),
                                "--namespace",
                                ns.name(),
                                "--leader-election-identity",
                                "test-controller",
                                "--bind-address",
                                "127.0.0.1",
                                "--health-port",
                                std::to_string(port),
                                "--metrics-port",
                                std::to_string(port)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, BANLIEUE_BINARY, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  auto output = [&] {
    std::ifstream in(log);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  auto readyz = [&] {
    return runCommand("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:" +
                      std::to_string(port) + "/readyz")
        .output;
  };

  const kube::ResourceType lease_type{"coordination.k8s.io", "v1", "leases", true};
  auto holder = [&] {
    auto lease = client->get(lease_type, ns.name(), "banlieue-controller");
    return lease.ok() ? json::stringOr(&*lease, "spec.holderIdentity") : std::string("<none>");
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return holder() == "test-controller"; })) << output();
  EXPECT_TRUE(LocalCluster::eventually([&] { return readyz() == "200"; })) << output();

  // It reconciles: a VM naming a class that does not exist is told so.
  ASSERT_EQ(cluster
                .apply("apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  "
                       "name: lonely\nspec:\n  classRef: {name: no-such-class-" +
                           ns.name() + "}\n  imageRef: {name: no-such-image}\n",
                       "-n " + ns.name())
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto vm = cluster.kubectl("get bvm lonely -n " + ns.name() +
                              " -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].reason}'");
    return vm.output == "ClassNotFound";
  })) << output();

  kill(pid, SIGTERM);
  int status = -1;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output();
  EXPECT_EQ(holder(), "") << "a clean stop releases the Lease";
  // The VM's finalizer would keep the namespace; the controller is gone, so drop it.
  cluster.kubectl("patch bvm lonely -n " + ns.name() +
                  " --type merge -p '{\"metadata\":{\"finalizers\":null}}'");
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace banlieue::testing
