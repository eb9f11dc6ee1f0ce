// `banlieue operator` against the real local control plane and its node (kubelet, containerd). The
// operator runs as a child process under the identity `banlieue bootstrap operator` gives it (its
// ServiceAccount's token and bootstrap's ClusterRole), so the apiserver's RBAC escalation
// check proves it holds everything it grants. Each test has its own namespace and classes.
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/bootstrap/plugin_discovery.h"
#include "host/roles/operator/workload_names.h"
#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <banlieue/sdk/json.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace banlieue::testing {
namespace {

namespace fs = std::filesystem;
namespace json = sdk::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// The build's plugin directory (the example file plugin and the in-tree ones).
const char* const kPluginDir = PLUGIN_DIR;
// Where the images keep their plugins; the example file plugin's provider image
// (examples/file-provider/Containerfile, built by deploy/local/images) adds `file` there.
const char* const kImagePluginDir = "/usr/lib/banlieue/plugins";
const std::string kFileProviderImage = "localhost/banlieue-provider-file";
// The file backend's directory inside the provider pod: its /tmp, an emptyDir of the pod.
const char* const kBackendDir = "/tmp";
constexpr const char* kSystem = "banlieue-system";
constexpr auto kMint = std::chrono::seconds(60);

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// A kubeconfig for the cluster that authenticates with `token` only (no client certificate,
// which the apiserver would prefer).
fs::path tokenKubeconfig(const LocalCluster& cluster, std::string token, const fs::path& path) {
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  fs::copy_file(cluster.kubeconfig(), path, fs::copy_options::overwrite_existing);
  std::string k = LocalCluster::kubectlBinary() + " config --kubeconfig " + shellQuote(path);
  EXPECT_EQ(runCommand(k + " set-credentials token-user --token=" + shellQuote(token)).exit_code,
            0);
  EXPECT_EQ(runCommand(k + " set-context --current --user=token-user").exit_code, 0);
  return path;
}

class OperatorTest : public ::testing::Test {
 protected:
  // Started by the first test's SetUp, not SetUpTestSuite: gtest turns a failure there into
  // skipped tests, which CTest would report as skipped instead of failed.
  void SetUp() override {
    if (!attempted_) {
      attempted_ = true;
      startOperator();
    }
    ASSERT_TRUE(ready_) << "the operator did not start; see the first test's failures";
  }

  static void startOperator() {
    auto& cluster = LocalCluster::shared();
    work_ = fs::temp_directory_path() / ("banlieue-operator-test-" + std::to_string(::getpid()));
    fs::remove_all(work_);
    // The operator (this process) reads provider.json from the build's plugin directory; the
    // provider pods it mints load the example plugin from their image's.
    fs::create_directories(work_);

    // What bootstrap installs for the operator and the file backend, minus the Deployments
    // (this process runs the operator) and ProviderClasses (each test has its own).
    auto plugins = roles::bootstrap::discoverPlugins(kPluginDir);
    ASSERT_TRUE(plugins.ok()) << plugins.status().message();
    roles::bootstrap::BootstrapOptions options;
    options.image = roles::bootstrap::defaultImage();
    auto client = cluster.client();
    ASSERT_NE(client, nullptr);
    for (const auto& object : roles::bootstrap::buildBootstrapObjects(options, *plugins)) {
      std::string kind = json::stringOr(&object, "kind", "");
      std::string name = json::stringOr(&object, "metadata.name", "");
      bool wanted = kind == "Namespace" || kind == "ServiceAccount" ||
                    (kind == "CustomResourceDefinition" &&
                     name.find(".file.example.com") != std::string::npos) ||
                    (kind.find("Role") != std::string::npos &&
                     (name.rfind("banlieue-operator", 0) == 0 || name == "banlieue-provider-file" ||
                      name == "banlieue-provider-imports"));
      if (!wanted) continue;
      auto applied = cluster.apply(json::serialize(object),
                                   "--server-side --force-conflicts "
                                   "--field-manager=banlieue.io/bootstrap");
      ASSERT_EQ(applied.exit_code, 0) << kind << " " << name << ": " << applied.output;
    }

    // A bootstrapped operator Deployment (from another test) would hold the Lease: displace
    // it for the duration of this process and put it back afterwards.
    auto replicas = cluster.kubectl(std::string("get deployment banlieue-operator -n ") + kSystem +
                                    " -o jsonpath='{.spec.replicas}'");
    displaced_replicas_ = replicas.exit_code == 0 ? replicas.output : "";
    if (!displaced_replicas_.empty() && displaced_replicas_ != "0") {
      cluster.kubectl(std::string("scale deployment banlieue-operator --replicas=0 -n ") + kSystem);
    }

    auto token =
        cluster.kubectl(std::string("create token banlieue-operator --duration=2h -n ") + kSystem);
    ASSERT_EQ(token.exit_code, 0) << token.output;
    auto kubeconfig = tokenKubeconfig(cluster, token.output, work_ / "operator.kubeconfig");

    health_port_ = freePort();
    log_ = work_ / "operator.log";
    std::vector<std::string> args = {BANLIEUE_BINARY,
                                     "--log-level",
                                     "debug",
                                     "operator",
                                     "--kubeconfig",
                                     kubeconfig.string(),
                                     "--namespace",
                                     kSystem,
                                     "--plugin-dir",
                                     kPluginDir,
                                     "--image-plugin-dir",
                                     kImagePluginDir,
                                     "--health-port",
                                     std::to_string(health_port_),
                                     "--metrics-port",
                                     "-1"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    ASSERT_EQ(posix_spawn(&pid_, BANLIEUE_BINARY, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    // Ready means leading with synced caches; a displaced leader's Lease may take a lease
    // duration to expire.
    ASSERT_TRUE(LocalCluster::eventually(
        [] {
          return runCommand("curl -sf http://127.0.0.1:" + std::to_string(health_port_) + "/readyz")
                     .exit_code == 0;
        },
        60s))
        << readFile(log_);
    ready_ = true;
  }

  static void TearDownTestSuite() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << readFile(log_);
      pid_ = -1;
    }
    if (!displaced_replicas_.empty() && displaced_replicas_ != "0") {
      LocalCluster::shared().kubectl("scale deployment banlieue-operator --replicas=" +
                                     displaced_replicas_ + " -n " + kSystem);
    }
    if (!work_.empty()) fs::remove_all(work_);
  }

  void TearDown() override {
    // Providers carry the operator's finalizer: delete them while it runs.
    for (const auto& ns : namespaces_) {
      cluster_.kubectl("delete providers --all --wait=true --timeout=60s -n " + ns);
    }
    for (const auto& c : classes_) cluster_.kubectl("delete providerclass " + c + " --wait=false");
    if (HasFailure()) std::cerr << "operator log:\n" << readFile(log_) << "\n";
  }

  // The tag of this build's images (localhost/banlieue-provider-file:<version>).
  static std::string imageTag() {
    std::string image = roles::bootstrap::defaultImage();
    return image.substr(image.rfind(':') + 1);
  }

  // Runs `command` in the provider container of Deployment `deployment`, as a user would
  // inspect a backend that lives in the pod; true when it exits 0.
  bool inPod(const std::string& ns, const std::string& deployment, const std::string& command) {
    auto r =
        cluster_.kubectl("exec -n " + ns + " deploy/" + deployment + " -c provider -- " + command);
    return r.exit_code == 0;
  }

  // A Managed class of the file backend; `suffix` keeps classes of different tests apart.
  // Only the image of this build's version exists on the node: a class of another tag mints
  // Deployments whose pods cannot start, which is all the tests of the minted objects need.
  std::string createClass(const std::string& suffix, const std::string& tag = "1.0.0",
                          const std::string& extra = "") {
    std::string name = "optest-" + std::to_string(::getpid()) + "-" + suffix;
    auto r = cluster_.apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\n"
        "metadata: {name: " +
        name +
        "}\nspec:\n  backend: file\n"
        "  plugin: {path: " +
        std::string(kImagePluginDir) + "/file}\n" +
        (extra.find("External") != std::string::npos
             ? ""
             : "  image: {repository: " + kFileProviderImage + ", tag: \"" + tag + "\"}\n") +
        extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    classes_.push_back(name);
    return name;
  }

  void createProvider(const std::string& ns, const std::string& name, const std::string& cls,
                      const std::string& extra_spec = "",
                      const std::string& secret = "credentials") {
    namespaces_.insert(ns);
    std::string connection =
        "  connection:\n    endpoint: file://" + std::string(kBackendDir) + "\n";
    if (!secret.empty()) connection += "    credentialsRef: {name: " + secret + "}\n";
    auto r = cluster_.apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: Provider\nmetadata: {name: " + name +
        ", namespace: " + ns + "}\nspec:\n  providerClassRef: {name: " + cls + "}\n" + connection +
        extra_spec);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  std::string get(const std::string& what, const std::string& jsonpath) {
    auto r = cluster_.kubectl("get " + what + " -o jsonpath='" + jsonpath + "'");
    return r.exit_code == 0 ? r.output : "<error: " + r.output + ">";
  }

  bool exists(const std::string& what) {
    return cluster_.kubectl("get " + what + " -o name").exit_code == 0;
  }

  // Every object labelled for the Provider, in every namespace: "kind/ns/name" lines.
  std::set<std::string> labelled(const std::string& ns, const std::string& provider) {
    auto r = cluster_.kubectl(
        "get deployments,serviceaccounts,roles,rolebindings,clusterrolebindings -A "
        "-l banlieue.io/provider=" +
        provider + ",banlieue.io/provider-namespace=" + ns +
        " -o jsonpath='{range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{\"\\n\"}"
        "{end}'");
    std::set<std::string> out;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) out.insert(line);
    }
    return out;
  }

  static std::string workloadOf(const std::string& cls, const std::string& provider) {
    return "banlieue-provider-" + cls + "-" + provider;
  }
  // Test namespaces are long: the name is capped as workload_names.h says.
  static std::string crbOf(const std::string& cls, const std::string& ns,
                           const std::string& provider) {
    return roles::provider_operator::clusterScopedName(cls, ns, provider);
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  std::set<std::string> namespaces_;
  std::vector<std::string> classes_;

  static inline fs::path work_;
  static inline fs::path log_;
  static inline pid_t pid_ = -1;
  static inline bool attempted_ = false;
  static inline bool ready_ = false;
  static inline int health_port_ = 0;
  static inline std::string displaced_replicas_;
};

TEST_F(OperatorTest, AProviderGetsItsWorkloadAndTheNodeRunsIt) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  ASSERT_EQ(cluster_.kubectl("create secret generic credentials --from-literal=token=t -n " + n)
                .exit_code,
            0);
  // The version whose image the node has: this pod must run.
  std::string cls = createClass("mint", imageTag());
  createProvider(n, "lab", cls);
  const std::string w = workloadOf(cls, "lab");
  std::set<std::string> want = {
      "ServiceAccount/" + n + "/" + w,
      "Role/" + n + "/" + w,
      "RoleBinding/" + n + "/" + w,
      "Role/" + n + "/" + w + "-import",
      "RoleBinding/" + n + "/" + w + "-import",
      // The runtime's import Jobs, in the build namespace only (ADR 0015).
      "RoleBinding/banlieue-imagebuild/" + crbOf(cls, n, "lab"),
      "ClusterRoleBinding//" + crbOf(cls, n, "lab"),
      "Deployment/" + n + "/" + w,
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab") == want; }, kMint))
      << ::testing::PrintToString(labelled(n, "lab"));
  EXPECT_EQ(get("provider lab -n " + n, "{.metadata.finalizers}"),
            "[\"banlieue.io/provider-workload\"]");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("provider lab -n " + n,
                   "{.status.workload.mode}/{.status.workload.deploymentName}/"
                   "{.status.workload.namespace}") == "Managed/" + w + "/" + n;
      },
      kMint));
  // The operator's field manager owns status.workload and no condition (1.20 does not
  // record the subresource in managedFields, so the fields themselves are checked).
  auto managed = cluster_.kubectl("get provider lab -n " + n + " --show-managed-fields -o json");
  ASSERT_EQ(managed.exit_code, 0) << managed.output;
  auto provider = json::parse(managed.output, "provider");
  std::string operator_fields;
  for (const auto& entry : json::find(&provider, "metadata.managedFields")->GetArray()) {
    if (json::stringOr(&entry, "manager", "") == "banlieue.io/operator") {
      operator_fields += json::serialize(entry["fieldsV1"]);
    }
  }
  EXPECT_THAT(operator_fields, HasSubstr("\"f:workload\""));
  EXPECT_THAT(operator_fields, ::testing::Not(HasSubstr("f:conditions")));

  // The contract with the provider runtime, and the pod the node runs from it.
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.spec.template.spec.containers[0].args}"),
            "[\"--log-level\",\"info\",\"--log-format\",\"text\",\"provider\",\"file\","
            "\"--provider\",\"" +
                n + "/lab\",\"--plugin-dir\",\"" + kImagePluginDir +
                "\","
                "\"--leader-election-id\",\"" +
                w + "\",\"--leader-election-namespace\",\"" + n +
                "\",\"--state-dir\",\"/var/lib/banlieue\"]");
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.spec.template.spec.serviceAccountName}"), w);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        auto phase = get("pods -n " + n + " -l banlieue.io/provider=lab",
                         "{.items[0].spec.nodeName}/{.items[0].status.containerStatuses[0].name}");
        return phase.find("/provider") != std::string::npos && phase[0] != '/';
      },
      kMint))
      << cluster_.kubectl("get pods -o wide -n " + n).output;
  // The minted pod is the real provider runtime: it loads the plugin, connects with the
  // Provider's credentials and reports the plugin's failure domains; the operator mirrors the
  // pod's readiness.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("provider lab -n " + n,
                   "{.status.conditions[?(@.type==\"Ready\")].status}/"
                   "{.status.failureDomains[*].name}/{.status.workload.readyReplicas}") ==
               "True/local/1";
      },
      kMint))
      << cluster_.kubectl("get provider lab -n " + n + " -o yaml").output
      << cluster_.kubectl("get pods -o wide -n " + n).output;
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.status.readyReplicas}"), "1");
  // It serves the plugin's machine kind: provisioned, then removed with its backend file.
  auto machine = cluster_.apply(R"(apiVersion: infrastructure.file.example.com/v1alpha1
kind: FileMachine
metadata: {name: vm1, namespace: )" +
                                n + R"(, labels: {banlieue.io/provider: lab}}
spec: {providerRef: {name: lab}, cpus: 1, memoryMiB: 128}
)");
  ASSERT_EQ(machine.exit_code, 0) << machine.output;
  auto ready = cluster_.kubectl("wait --for=condition=Ready --timeout=60s filemachine/vm1 -n " + n,
                                std::chrono::seconds(90));
  EXPECT_EQ(ready.exit_code, 0) << ready.output
                                << cluster_.kubectl("get filemachine vm1 -o yaml -n " + n).output;
  EXPECT_TRUE(inPod(n, w, "test -f " + std::string(kBackendDir) + "/" + n + "_vm1.json"));
  auto deleted =
      cluster_.kubectl("delete filemachine vm1 --timeout=60s -n " + n, std::chrono::seconds(90));
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_FALSE(inPod(n, w, "test -e " + std::string(kBackendDir) + "/" + n + "_vm1.json"));

  // ProviderClass status: one Provider, usable, the plugin's machine kind.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls,
                   "{.status.providers}/{.status.conditions[?(@.type==\"Ready\")].status}/"
                   "{.status.machineKind.kind}/{.status.machineKind.apiVersion}") ==
               "1/True/FileMachine/infrastructure.file.example.com/v1alpha1";
      },
      kMint))
      << cluster_.kubectl("get providerclass " + cls + " -o yaml").output;
}

TEST_F(OperatorTest, TheProviderIdentityReadsItsOwnSecretAndNoOther) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  for (const char* secret : {"credentials", "someone-else"}) {
    ASSERT_EQ(cluster_
                  .kubectl(std::string("create secret generic ") + secret +
                           " --from-literal=username=u -n " + n)
                  .exit_code,
              0);
  }
  std::string cls = createClass("rbac");
  createProvider(n, "lab", cls);
  const std::string w = workloadOf(cls, "lab");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return exists("rolebinding " + w + " -n " + n) && exists("role " + w + " -n " + n); },
      kMint));
  // A real token of the provider's ServiceAccount against the apiserver's RBAC.
  auto token = cluster_.kubectl("create token " + w + " -n " + n);
  ASSERT_EQ(token.exit_code, 0) << token.output;
  auto kubeconfig = tokenKubeconfig(cluster_, token.output, work_ / ("provider-" + n));
  std::string as_provider =
      LocalCluster::kubectlBinary() + " --kubeconfig " + shellQuote(kubeconfig) + " -n " + n + " ";
  auto own = runCommand(as_provider + "get secret credentials -o jsonpath='{.data.username}'");
  EXPECT_EQ(own.exit_code, 0) << own.output;
  EXPECT_EQ(own.output, "dQ==");
  auto other = runCommand(as_provider + "get secret someone-else");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_THAT(other.output, HasSubstr("Forbidden"));
  auto list = runCommand(as_provider + "get secrets");
  EXPECT_THAT(list.output, HasSubstr("Forbidden"));
  // Its own Lease, by name, and nothing else's.
  std::string sa = "--as=system:serviceaccount:" + n + ":" + w + " -n " + n;
  EXPECT_EQ(cluster_.kubectl("auth can-i update lease/" + w + " " + sa).output, "yes\n");
  EXPECT_NE(cluster_.kubectl("auth can-i update lease/banlieue-operator " + sa).output, "yes\n");
  // The shared backend ClusterRole, through the minted ClusterRoleBinding.
  EXPECT_THAT(
      cluster_.kubectl("auth can-i list filemachines.infrastructure.file.example.com " + sa).output,
      HasSubstr("yes"));
  fs::remove(kubeconfig);

  // A Provider without credentials gets no Secret access at all.
  createProvider(n, "anon", cls, "", "");
  const std::string anon = workloadOf(cls, "anon");
  ASSERT_TRUE(LocalCluster::eventually([&] { return exists("role " + anon + " -n " + n); }, kMint));
  EXPECT_THAT(get("role " + anon + " -n " + n, "{.rules[*].resources}"),
              ::testing::Not(HasSubstr("secrets")));
  EXPECT_NE(cluster_
                .kubectl("auth can-i get secret/credentials --as=system:serviceaccount:" + n + ":" +
                         anon + " -n " + n)
                .output,
            "yes\n");
}

TEST_F(OperatorTest, AClassEditRollsEveryProviderOfTheClassAtOnce) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  // Pods that stay Pending keep the Deployments' status still, so nothing but the class edit
  // itself can bring the Providers back before their 30 s requeue.
  std::string cls =
      createClass("roll", "1.0.0", "  nodeSelector: {banlieue.io/operator-test: nowhere}\n");
  createProvider(n, "one", cls);
  createProvider(n, "two", cls);
  auto images = [&] {
    return get("deployment " + workloadOf(cls, "one") + " -n " + n,
               "{.spec.template.spec.containers[0].image}") +
           "," +
           get("deployment " + workloadOf(cls, "two") + " -n " + n,
               "{.spec.template.spec.containers[0].image}");
  };
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return images() ==
               "localhost/banlieue-provider-file:1.0.0,localhost/banlieue-provider-file:1.0.0";
      },
      kMint))
      << images();
  auto settled = [&](const std::string& provider) {
    return get("deployment " + workloadOf(cls, provider) + " -n " + n,
               "{.metadata.generation}={.status.observedGeneration}/"
               "{.status.unavailableReplicas}") == "1=1/1";
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return settled("one") && settled("two"); }, kMint));
  // Quiet: the Deployment controller's status updates (each of which brings a Provider back)
  // have stopped, so the next periodic requeue is still far away.
  auto versions = [&] {
    return get("deployments,providers -n " + n, "{.items[*].metadata.resourceVersion}");
  };
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto before = versions();
        std::this_thread::sleep_for(3s);
        return versions() == before;
      },
      kMint));
  EXPECT_EQ(get("deployment " + workloadOf(cls, "one") + " -n " + n,
                "{.spec.template.spec.nodeSelector}"),
            "{\"banlieue.io/operator-test\":\"nowhere\"}");
  ASSERT_EQ(cluster_
                .kubectl("patch providerclass " + cls +
                         " --type=merge -p '{\"spec\":{\"image\":{\"tag\":\"2.0.0\"},"
                         "\"logging\":{\"level\":\"debug\"}}}'")
                .exit_code,
            0);
  // Well within the 30 s periodic requeue: the edit itself fans out.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return images() ==
               "localhost/banlieue-provider-file:2.0.0,localhost/banlieue-provider-file:2.0.0";
      },
      5s))
      << images();
  EXPECT_THAT(get("deployment " + workloadOf(cls, "two") + " -n " + n,
                  "{.spec.template.spec.containers[0].args}"),
              HasSubstr("\"--log-level\",\"debug\""));
  EXPECT_EQ(get("providerclass " + cls, "{.status.providers}"), "2");
}

TEST_F(OperatorTest, MovingAProviderToAnotherClassLeavesNothingOfTheOldWorkload) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string old_cls = createClass("old");
  std::string new_cls = createClass("new");
  createProvider(n, "lab", old_cls);
  const std::string old_crb = "clusterrolebinding/" + crbOf(old_cls, n, "lab");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return exists(old_crb) && exists("deployment " + workloadOf(old_cls, "lab") + " -n " + n);
      },
      kMint));
  ASSERT_EQ(cluster_
                .kubectl("patch provider lab -n " + n +
                         " --type=merge -p '{\"spec\":{\"providerClassRef\":{\"name\":\"" +
                         new_cls + "\"}}}'")
                .exit_code,
            0);
  const std::string w = workloadOf(new_cls, "lab");
  std::set<std::string> want = {
      "ServiceAccount/" + n + "/" + w,
      "Role/" + n + "/" + w,
      "RoleBinding/" + n + "/" + w,
      "Role/" + n + "/" + w + "-import",
      "RoleBinding/" + n + "/" + w + "-import",
      "RoleBinding/banlieue-imagebuild/" + crbOf(new_cls, n, "lab"),
      "ClusterRoleBinding//" + crbOf(new_cls, n, "lab"),
      "Deployment/" + n + "/" + w,
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab") == want; }, kMint))
      << ::testing::PrintToString(labelled(n, "lab"));
  EXPECT_FALSE(exists(old_crb));
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + old_cls, "{.status.providers}") == "0" &&
               get("providerclass " + new_cls, "{.status.providers}") == "1";
      },
      kMint));
}

TEST_F(OperatorTest, DeletingTheProviderRemovesEverything) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("delete");
  createProvider(n, "lab", cls);
  ASSERT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab").size() == 8; }, kMint));
  auto r = cluster_.kubectl("delete provider lab --timeout=60s -n " + n);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "lab").empty(); }, kMint))
      << ::testing::PrintToString(labelled(n, "lab"));
  EXPECT_FALSE(exists("clusterrolebinding " + crbOf(cls, n, "lab")));
}

TEST_F(OperatorTest, PausedProvidersAndClassesAreLeftAlone) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("pause");
  createProvider(n, "lab", cls, "  paused: true\n");
  const std::string w = workloadOf(cls, "lab");
  auto paused_event = [&](const std::string& needle) {
    auto r = cluster_.kubectl("get events -n " + n +
                              " --field-selector reason=Paused -o jsonpath='{.items[*].message}'");
    return r.output.find(needle) != std::string::npos;
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return paused_event("Provider is paused"); }, kMint));
  EXPECT_TRUE(labelled(n, "lab").empty());

  cluster_.kubectl("patch provider lab -n " + n +
                   " --type=merge -p '{\"spec\":{\"paused\":false}}'");
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return exists("deployment " + w + " -n " + n); }, kMint));

  // A paused class: the edit is not rolled out, and the class says why.
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"paused\":true}}'");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls, "{.status.conditions[?(@.type==\"Paused\")].status}") ==
               "True";
      },
      kMint));
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"image\":{\"tag\":\"9.9.9\"}}}'");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return paused_event("ProviderClass " + cls + " is paused"); }, kMint));
  EXPECT_EQ(get("deployment " + w + " -n " + n, "{.spec.template.spec.containers[0].image}"),
            "localhost/banlieue-provider-file:1.0.0");
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"paused\":false}}'");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("deployment " + w + " -n " + n, "{.spec.template.spec.containers[0].image}") ==
               "localhost/banlieue-provider-file:9.9.9";
      },
      kMint));
}

TEST_F(OperatorTest, ExternalProvidersGetIdentityAndRbacOnly) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("external", "", "  deployment: External\n");
  createProvider(n, "host", cls);
  const std::string w = workloadOf(cls, "host");
  std::set<std::string> want = {
      "ServiceAccount/" + n + "/" + w,
      "Role/" + n + "/" + w,
      "RoleBinding/" + n + "/" + w,
      "ClusterRoleBinding//" + crbOf(cls, n, "host"),
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return labelled(n, "host") == want; }, kMint))
      << ::testing::PrintToString(labelled(n, "host"));
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("provider host -n " + n,
                   "{.status.workload.mode}/{.status.workload.namespace}") == "External/" + n;
      },
      kMint));
  // The host-resident process mints its own tokens and writes its Provider's status.
  std::string sa = "--as=system:serviceaccount:" + n + ":" + w + " -n " + n;
  EXPECT_EQ(
      cluster_.kubectl("auth can-i create serviceaccounts/" + w + " --subresource=token " + sa)
          .output,
      "yes\n");
  EXPECT_EQ(
      cluster_.kubectl("auth can-i patch providers.banlieue.io/host --subresource=status " + sa)
          .output,
      "yes\n");
  EXPECT_EQ(cluster_.kubectl("auth can-i get secret/credentials " + sa).output, "yes\n");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls, "{.status.conditions[?(@.type==\"Ready\")].status}") ==
               "True";
      },
      kMint));
}

TEST_F(OperatorTest, AnUnusableClassSaysWhyAndMintsNoDeployment) {
  LocalCluster::TestNamespace ns(cluster_);
  const std::string n = ns.name();
  std::string cls = createClass("bad", "1.0.0");
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=merge -p '{\"spec\":{\"plugin\":{\"path\":\"/etc/passwd\"}}}'");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls, "{.status.conditions[?(@.type==\"Ready\")].reason}") ==
               "PluginPathEscapes";
      },
      kMint));
  cluster_.kubectl("patch providerclass " + cls +
                   " --type=json -p '[{\"op\":\"remove\",\"path\":"
                   "\"/spec/image\"}]'");
  createProvider(n, "lab", cls);
  auto warning = [&] {
    return cluster_
        .kubectl("get events -n " + n +
                 " --field-selector reason=InvalidImage -o jsonpath='{.items[*].message}'")
        .output;
  };
  EXPECT_TRUE(LocalCluster::eventually([&] { return !warning().empty(); }, kMint));
  EXPECT_FALSE(exists("deployment " + workloadOf(cls, "lab") + " -n " + n));
}

}  // namespace
}  // namespace banlieue::testing
