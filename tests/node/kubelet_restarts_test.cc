// The local cluster's node is a real kubelet on containerd (deploy/local/node.sh): what a pod
// of banlieue's image asks for is honoured. A container whose process is killed from the host
// is restarted by the kubelet; a failing liveness probe restarts the container; the
// securityContext banlieue's Deployments use holds inside the container (non-root, read-only
// root filesystem, no capabilities); `kubectl logs` and `kubectl exec` reach it.
// Labels: integration;node.
#include "host/roles/bootstrap/manifests.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <string>

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;

constexpr auto kStart = std::chrono::seconds(90);

class KubeletTest : public ::testing::Test {
 protected:
  // A pod of banlieue's image, locked down as the operator's Deployments are, running
  // `command` under sh with an emptyDir at /tmp; `extra` is appended to the container.
  void createPod(const std::string& name, const std::string& command,
                 const std::string& extra = "") {
    auto r = cluster_.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns_.name() +
        "}\n"
        "spec:\n"
        "  terminationGracePeriodSeconds: 1\n"
        "  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532,\n"
        "                    seccompProfile: {type: RuntimeDefault}}\n"
        "  volumes: [{name: tmp, emptyDir: {}}]\n"
        "  containers:\n"
        "  - name: main\n"
        "    image: " +
        roles::bootstrap::defaultImage() +
        "\n"
        "    imagePullPolicy: Never\n"
        "    command: [/bin/sh, -c, '" +
        command +
        "']\n"
        "    volumeMounts: [{name: tmp, mountPath: /tmp}]\n"
        "    securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false,\n"
        "                      capabilities: {drop: [ALL]}}\n" +
        extra);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto ready = cluster_.kubectl(
        "wait --for=condition=Ready --timeout=90s pod/" + name + " -n " + ns_.name(),
        kStart + std::chrono::seconds(30));
    ASSERT_EQ(ready.exit_code, 0) << ready.output << describe(name);
  }

  std::string get(const std::string& pod, const std::string& path) const {
    auto r =
        cluster_.kubectl("get pod " + pod + " -n " + ns_.name() + " -o jsonpath='" + path + "'");
    return r.exit_code == 0 ? r.output : "<error: " + r.output + ">";
  }
  std::string describe(const std::string& pod) const {
    return cluster_.kubectl("describe pod " + pod + " -n " + ns_.name()).output;
  }
  int restarts(const std::string& pod) const {
    std::string n = get(pod, "{.status.containerStatuses[0].restartCount}");
    return n.empty() || n[0] == '<' ? -1 : std::stoi(n);
  }
  bool runningAgain(const std::string& pod, int restart_count) const {
    return restarts(pod) == restart_count &&
           get(pod, "{.status.containerStatuses[0].ready}") == "true";
  }

  // The container's main process as the host sees it, from containerd's task list.
  std::string hostPid(const std::string& pod) const {
    std::string id = get(pod, "{.status.containerStatuses[0].containerID}");
    const std::string scheme = "containerd://";
    if (id.rfind(scheme, 0) != 0) return {};
    id = id.substr(scheme.size());
    auto socket = cluster_.kubeconfig().parent_path() / "node" / "containerd.sock";
    auto tasks =
        runCommand("ctr --address " + shellQuote(socket.string()) +
                   " -n k8s.io tasks ls | awk -v id=" + shellQuote(id) + " '$1 == id {print $2}'");
    std::string pid = tasks.output;
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return tasks.exit_code == 0 ? pid : std::string();
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  LocalCluster::TestNamespace ns_{cluster_};
};

TEST_F(KubeletTest, AKilledContainerIsRestartedByTheKubelet) {
  createPod("victim", "echo started; exec sleep 3600");
  ASSERT_EQ(restarts("victim"), 0);
  std::string pid = hostPid("victim");
  ASSERT_FALSE(pid.empty()) << "containerd lists no task for the pod's container";
  ASSERT_EQ(::kill(std::stoi(pid), SIGKILL), 0) << pid;
  EXPECT_TRUE(LocalCluster::eventually([&] { return runningAgain("victim", 1); }, kStart))
      << describe("victim");
  EXPECT_NE(hostPid("victim"), pid);
  // `kubectl logs` reaches the kubelet; --previous is the killed container's log.
  auto logs = cluster_.kubectl("logs victim --previous -n " + ns_.name());
  EXPECT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_THAT(logs.output, HasSubstr("started"));
}

TEST_F(KubeletTest, AFailingLivenessProbeRestartsTheContainer) {
  createPod("probed", "touch /tmp/alive; exec sleep 3600",
            "    livenessProbe:\n"
            "      exec: {command: [cat, /tmp/alive]}\n"
            "      periodSeconds: 1\n"
            "      failureThreshold: 1\n");
  ASSERT_EQ(restarts("probed"), 0);
  auto exec = cluster_.kubectl("exec probed -n " + ns_.name() + " -- rm /tmp/alive");
  ASSERT_EQ(exec.exit_code, 0) << exec.output;
  // The emptyDir survives the restart, so the new container's `touch` brings it back.
  EXPECT_TRUE(LocalCluster::eventually([&] { return runningAgain("probed", 1); }, kStart))
      << describe("probed");
  EXPECT_THAT(cluster_.kubectl("get events -n " + ns_.name()).output,
              HasSubstr("Liveness probe failed"));
}

TEST_F(KubeletTest, TheContainerIsNonRootReadOnlyAndWithoutCapabilities) {
  createPod("locked", "exec sleep 3600");
  auto exec = [&](const std::string& command) {
    return cluster_.kubectl("exec locked -n " + ns_.name() + " -- /bin/sh -c '" + command + "'");
  };
  auto id = exec("id -u; id -g");
  ASSERT_EQ(id.exit_code, 0) << id.output;
  EXPECT_EQ(id.output, "65532\n65532\n");
  auto write = exec("touch /usr/bin/x");
  EXPECT_NE(write.exit_code, 0);
  EXPECT_THAT(write.output, HasSubstr("Read-only file system"));
  EXPECT_EQ(exec("touch /tmp/x").exit_code, 0);
  // Effective and bounding capability sets are empty.
  auto caps = exec("grep -E \"^Cap(Eff|Bnd):\" /proc/self/status");
  ASSERT_EQ(caps.exit_code, 0) << caps.output;
  EXPECT_EQ(caps.output, "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n");
  // The pod has an address from the node's pod range, not the host's.
  std::string ip = get("locked", "{.status.podIP}");
  EXPECT_EQ(ip.rfind("10.214.", 0), 0U) << ip;
}

}  // namespace
}  // namespace banlieue::testing
