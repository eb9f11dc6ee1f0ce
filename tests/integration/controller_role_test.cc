// `banlieue controller` as a process against the real apiserver: it takes the Lease in
// --leader-election-namespace, answers /readyz only once its caches are synced and it leads,
// does its job (a VM gets its infra CR), and on SIGTERM releases the Lease and exits 0; a lost
// Lease stops its workers and the same process campaigns again.
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

// A `banlieue controller` process leading in `ns`, its stderr in a log file.
class ControllerProcess {
 public:
  ControllerProcess(LocalCluster& cluster, const std::string& ns)
      : port_(freePort()),
        log_(std::filesystem::temp_directory_path() / ("controller-" + ns + ".log")) {
    std::vector<std::string> args{BANLIEUE_BINARY,
                                  "controller",
                                  "--kubeconfig",
                                  cluster.kubeconfig().string(),
                                  "--leader-election-namespace",
                                  ns,
                                  "--namespace",
                                  ns,
                                  "--leader-election-identity",
                                  "test-controller",
                                  "--bind-address",
                                  "127.0.0.1",
                                  "--health-port",
                                  std::to_string(port_),
                                  "--metrics-port",
                                  std::to_string(port_)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, BANLIEUE_BINARY, &actions, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ControllerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove(log_);
  }
  ControllerProcess(const ControllerProcess&) = delete;
  ControllerProcess& operator=(const ControllerProcess&) = delete;

  bool started() const { return pid_ > 0; }
  bool running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string output() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string readyz() const {
    return runCommand("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:" +
                      std::to_string(port_) + "/readyz")
        .output;
  }
  // SIGTERM, then the exit status; -1 when it did not exit normally.
  int terminate() {
    kill(pid_, SIGTERM);
    int status = -1;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  int port_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
};

const kube::ResourceType kLeaseType{"coordination.k8s.io", "v1", "leases", true};

std::string leaseHolder(kube::KubeClient& client, const std::string& ns) {
  auto lease = client.get(kLeaseType, ns, "banlieue-controller");
  return lease.ok() ? json::stringOr(&*lease, "spec.holderIdentity") : std::string("<none>");
}

// A VM naming a class that does not exist; a reconciling controller says ClassNotFound.
bool applyLonelyVm(LocalCluster& cluster, const std::string& ns, const std::string& name) {
  return cluster
             .apply(
                 "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  "
                 "name: " +
                     name + "\nspec:\n  classRef: {name: no-such-class-" + ns +
                     "}\n  imageRef: {name: no-such-image}\n",
                 "-n " + ns)
             .exit_code == 0;
}

bool toldClassNotFound(LocalCluster& cluster, const std::string& ns, const std::string& name) {
  return LocalCluster::eventually([&] {
    auto vm = cluster.kubectl("get bvm " + name + " -n " + ns +
                              " -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].reason}'");
    return vm.output == "ClassNotFound";
  });
}

TEST(ControllerRoleTest, LeadsServesReadyzReconcilesAndReleasesTheLeaseOnSigterm) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  ControllerProcess controller(cluster, ns.name());
  ASSERT_TRUE(controller.started());

  EXPECT_TRUE(LocalCluster::eventually([&] {
    return leaseHolder(*client, ns.name()) == "test-controller";
  })) << controller.output();
  EXPECT_TRUE(LocalCluster::eventually([&] { return controller.readyz() == "200"; }))
      << controller.output();

  // It reconciles: a VM naming a class that does not exist is told so.
  ASSERT_TRUE(applyLonelyVm(cluster, ns.name(), "lonely"));
  EXPECT_TRUE(toldClassNotFound(cluster, ns.name(), "lonely")) << controller.output();

  std::string log = controller.output();
  EXPECT_EQ(controller.terminate(), 0) << log;
  EXPECT_EQ(leaseHolder(*client, ns.name()), "") << "a clean stop releases the Lease";
  // The VM's finalizer would keep the namespace; the controller is gone, so drop it.
  cluster.kubectl("patch bvm lonely -n " + ns.name() +
                  " --type merge -p '{\"metadata\":{\"finalizers\":null}}'");
}

// Issue #26, ADR 0021 amended: a controller that can no longer renew (here another holder took
// the Lease; an apiserver outage longer than renewDeadline looks the same to it) stops its
// workers and, in the same process, campaigns again and reconciles once it leads again. Before
// the amendment it exited with status 1, and the kubelet's crash back-off grew with every outage.
TEST(ControllerRoleTest, ALostLeaseStopsTheWorkersAndTheSameProcessLeadsAgain) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client = cluster.client();
  ASSERT_NE(client, nullptr);
  ControllerProcess controller(cluster, ns.name());
  ASSERT_TRUE(controller.started());
  ASSERT_TRUE(LocalCluster::eventually([&] { return controller.readyz() == "200"; }))
      << controller.output();
  ASSERT_TRUE(applyLonelyVm(cluster, ns.name(), "before"));
  ASSERT_TRUE(toldClassNotFound(cluster, ns.name(), "before")) << controller.output();

  // Another holder renews the Lease once and then goes silent.
  auto stolen = cluster.kubectl(
      "patch lease banlieue-controller -n " + ns.name() +
      " --type merge -p '{\"spec\":{\"holderIdentity\":\"thief\",\"leaseDurationSeconds\":15}}'");
  ASSERT_EQ(stolen.exit_code, 0) << stolen.output;
  EXPECT_TRUE(LocalCluster::eventually([&] { return controller.readyz() != "200"; }, 30s))
      << "the controller must step down once it cannot renew\n"
      << controller.output();
  EXPECT_TRUE(controller.running()) << "a lost Lease alone must not end the process\n"
                                    << controller.output();
  // A VM created around the handover is reconciled by the next term.
  ASSERT_TRUE(applyLonelyVm(cluster, ns.name(), "after"));
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return leaseHolder(*client, ns.name()) == "test-controller"; }, 60s))
      << "the silent holder's Lease expires and the same process takes it\n"
      << controller.output();
  EXPECT_TRUE(toldClassNotFound(cluster, ns.name(), "after")) << "the new term reconciles\n"
                                                              << controller.output();
  EXPECT_TRUE(controller.running());
  EXPECT_NE(controller.output().find("campaigning again"), std::string::npos)
      << controller.output();

  EXPECT_EQ(controller.terminate(), 0);
  for (const char* vm : {"before", "after"}) {
    cluster.kubectl("patch bvm " + std::string(vm) + " -n " + ns.name() +
                    " --type merge -p '{\"metadata\":{\"finalizers\":null}}'");
  }
}

}  // namespace
}  // namespace banlieue::testing
