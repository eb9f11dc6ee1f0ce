// The local node agent (`banlieue devnode`, started by deploy/local/up --node-agent) turns
// pods of banlieue's image into real processes: a Deployment reaches readyReplicas 1 and its
// process goes away when deleted, a Job runs to Succeeded (or Failed, with the exit code), a
// crashing container is restarted with back-off, and a pod of another image stays Pending
// with a reason. Everything is observed through kubectl and /proc, as a user would.
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;

class NodeAgentTest : public ::testing::Test {
 protected:
  LocalCluster& cluster_ = LocalCluster::shared();

  std::string jsonpath(const std::string& what, const std::string& ns, const std::string& path) {
    auto r = cluster_.kubectl("get " + what + " -n " + ns + " -o jsonpath='" + path + "'");
    return r.exit_code == 0 ? r.output : "";
  }
};

// Pids of processes whose command line contains `needle`.
std::vector<int> processesWith(const std::string& needle) {
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::stringstream cmdline;
    cmdline << in.rdbuf();
    std::string text = cmdline.str();
    std::replace(text.begin(), text.end(), '\0', ' ');
    if (text.find(needle) != std::string::npos && std::stoi(name) != getpid()) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

TEST_F(NodeAgentTest, TheNodeIsRegisteredReady) {
  auto nodes = cluster_.kubectl("get nodes -l banlieue.io/devnode=true");
  EXPECT_EQ(nodes.exit_code, 0) << nodes.output;
  EXPECT_THAT(nodes.output, HasSubstr("banlieue-devnode"));
  EXPECT_THAT(nodes.output, HasSubstr(" Ready "));
}

// The Deployment runs a long-lived banlieue command: a nested node agent using the pod's
// in-cluster identity (service-account token and CA from the mounted Secret volume, API
// address from KUBERNETES_SERVICE_HOST/PORT), its name from a fieldRef, and a readiness probe
// on its /readyz.
TEST_F(NodeAgentTest, ADeploymentBecomesReadyAndItsProcessStopsWhenDeleted) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string manifest = R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: inner-node, namespace: )" +
                         n + R"(}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: )" + n + R"(-inner-node}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [get, create, patch]}
- {apiGroups: [""], resources: [nodes/status, pods/status], verbs: [patch]}
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch, delete]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: )" + n + R"(-inner-node}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: )" +
                         n + R"(-inner-node}
subjects: [{kind: ServiceAccount, name: inner-node, namespace: )" +
                         n + R"(}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: inner-node, namespace: )" +
                         n + R"(}
spec:
  replicas: 1
  selector: {matchLabels: {app: inner-node}}
  template:
    metadata: {labels: {app: inner-node}}
    spec:
      serviceAccountName: inner-node
      containers:
      - name: devnode
        image: localhost/banlieue:dev
        command: [banlieue]
        args: [devnode, --node-name, $(NODE), --unschedulable, --heartbeat-seconds, "2"]
        env:
        - name: NODE
          value: )" + n + R"(-inner
        # Pods share the node's network: the agent gives this port a free host port, passes it
        # as $BANLIEUE_PORT_HEALTH and probes it there.
        ports: [{name: health, containerPort: 8081}]
        readinessProbe:
          httpGet: {path: /readyz, port: health}
          periodSeconds: 1
)";
  auto applied = cluster_.apply(manifest);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto rollout = cluster_.kubectl("rollout status deploy/inner-node -n " + n + " --timeout=90s",
                                  std::chrono::seconds(100));
  EXPECT_EQ(rollout.exit_code, 0) << rollout.output
                                  << cluster_.kubectl("describe pods -n " + n).output;
  EXPECT_EQ(jsonpath("deploy inner-node", n, "{.status.readyReplicas}"), "1");
  EXPECT_EQ(processesWith("--node-name " + n + "-inner").size(), 1u);
  // The nested agent really talks to the API server with the pod's identity.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return cluster_.kubectl("get node " + n + "-inner").exit_code == 0; }));

  auto deleted = cluster_.kubectl("delete deploy inner-node -n " + n + " --wait=true");
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return processesWith("--node-name " + n + "-inner").empty();
  })) << "the container process must stop when its pod is deleted";
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return cluster_.kubectl("get pods -n " + n + " -o name").output.empty();
  })) << "the agent removes the pod once its process has stopped";
  cluster_.kubectl("delete node " + n + "-inner clusterrole/" + n +
                   "-inner-node clusterrolebinding/" + n + "-inner-node --ignore-not-found");
  // The nested agent's default state directory (it ran without --state-dir).
  std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                              ("banlieue-devnode-" + n + "-inner"));
}

TEST_F(NodeAgentTest, AJobRunsToSucceededWithEnvFromAConfigMap) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  // An unknown --log-level makes banlieue exit 2 (usage): success proves the value resolved.
  auto applied = cluster_.apply(R"(apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: )" +
                                n + R"(}
data: {level: debug}
---
apiVersion: batch/v1
kind: Job
metadata: {name: version, namespace: )" +
                                n + R"(}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: localhost/banlieue:dev
        args: [--log-level, $(LEVEL), --version]
        env:
        - name: LEVEL
          valueFrom: {configMapKeyRef: {name: settings, key: level}}
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto done =
      cluster_.kubectl("wait --for=condition=complete job/version -n " + n + " --timeout=60s",
                       std::chrono::seconds(70));
  EXPECT_EQ(done.exit_code, 0) << done.output << cluster_.kubectl("describe pods -n " + n).output;
  EXPECT_EQ(jsonpath("pods", n, "{.items[0].status.phase}"), "Succeeded");
  EXPECT_EQ(
      jsonpath("pods", n, "{.items[0].status.containerStatuses[0].state.terminated.exitCode}"),
      "0");
  // `kubectl logs` reaches the agent's log endpoint through the apiserver.
  auto logs = cluster_.kubectl("logs job/version -n " + n);
  EXPECT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_THAT(logs.output, ::testing::HasSubstr(BANLIEUE_VERSION));
}

TEST_F(NodeAgentTest, AFailingJobReportsItsExitCode) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  auto applied = cluster_.apply(R"(apiVersion: batch/v1
kind: Job
metadata: {name: bad, namespace: )" +
                                n + R"(}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: localhost/banlieue:dev
        args: [--log-level, nonsense, devnode]
        terminationMessagePolicy: FallbackToLogsOnError
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto failed = cluster_.kubectl("wait --for=condition=failed job/bad -n " + n + " --timeout=60s",
                                 std::chrono::seconds(70));
  EXPECT_EQ(failed.exit_code, 0) << failed.output;
  EXPECT_EQ(jsonpath("pods", n, "{.items[0].status.phase}"), "Failed");
  EXPECT_EQ(
      jsonpath("pods", n, "{.items[0].status.containerStatuses[0].state.terminated.exitCode}"),
      "2");
  // Nothing was written to the termination file: the message is the log's tail.
  EXPECT_THAT(
      jsonpath("pods", n, "{.items[0].status.containerStatuses[0].state.terminated.message}"),
      HasSubstr("nonsense"));
}

// A container's termination message file, as a kubelet offers it: image-import writes its
// outcome to /dev/termination-log, the agent reports it as the terminated state's message,
// and the node's own /dev is left alone (the file lives in the container's private /dev).
TEST_F(NodeAgentTest, TheTerminationMessageFileReachesThePodStatus) {
  if (geteuid() != 0) GTEST_SKIP() << "the node agent offers termination files only as root";
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  auto applied = cluster_.apply(R"(apiVersion: batch/v1
kind: Job
metadata: {name: outcome, namespace: )" +
                                n + R"(}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: localhost/banlieue:dev
        args: [image-import, --backend, file, --provider-file, /etc/hostname, --image-file,
               /etc/hostname, --failure-domain, a, --artifact, /etc/hostname, --format, raw,
               --checksum, "sha256:00"]
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto failed =
      cluster_.kubectl("wait --for=condition=failed job/outcome -n " + n + " --timeout=60s",
                       std::chrono::seconds(70));
  EXPECT_EQ(failed.exit_code, 0) << failed.output;
  std::string message =
      jsonpath("pods", n, "{.items[0].status.containerStatuses[0].state.terminated.message}");
  EXPECT_THAT(message, HasSubstr(R"("reason":"ChecksumMalformed")")) << message;
  EXPECT_FALSE(std::filesystem::exists("/dev/termination-log"));
}

TEST_F(NodeAgentTest, ACrashingContainerIsRestartedWithBackOff) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  auto applied = cluster_.apply(R"(apiVersion: v1
kind: Pod
metadata: {name: crashing, namespace: )" +
                                n + R"(}
spec:
  restartPolicy: OnFailure
  containers:
  - name: main
    image: localhost/banlieue:dev
    args: [--log-level, nonsense, devnode]
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return jsonpath("pod crashing", n, "{.status.containerStatuses[0].restartCount}") == "1";
      },
      std::chrono::seconds(40)))
      << cluster_.kubectl("get pod crashing -n " + n + " -o yaml").output;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("pod crashing", n, "{.status.containerStatuses[0].state.waiting.reason}") ==
           "CrashLoopBackOff";
  }));
}

TEST_F(NodeAgentTest, APodOfAnotherImageStaysPendingWithAReason) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  auto applied = cluster_.apply(R"(apiVersion: v1
kind: Pod
metadata: {name: foreign, namespace: )" +
                                n + R"(}
spec:
  containers:
  - name: main
    image: docker.io/library/nginx:1.25
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("pod foreign", n, "{.status.containerStatuses[0].state.waiting.reason}") ==
           "ImageNotRunnable";
  })) << cluster_.kubectl("get pod foreign -n " + n + " -o yaml").output;
  EXPECT_EQ(jsonpath("pod foreign", n, "{.status.phase}"), "Pending");
  EXPECT_THAT(jsonpath("pod foreign", n, "{.status.containerStatuses[0].state.waiting.message}"),
              HasSubstr("localhost/banlieue"));
}

}  // namespace
}  // namespace banlieue::testing
