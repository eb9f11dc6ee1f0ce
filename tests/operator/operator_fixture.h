// The fixture of the operator's tests against the real local control plane and its node
// (kubelet, containerd): `banlieue operator` runs as a child process under the identity
// `banlieue bootstrap operator` gives it (its ServiceAccount's token and bootstrap's
// ClusterRole), so the apiserver's RBAC escalation check proves it holds everything it grants.
// Each test has its own namespace and classes. One binary's tests share one operator.
#pragma once

#include "host/roles/bootstrap/apply.h"
#include "host/roles/bootstrap/manifests.h"
#include "host/roles/bootstrap/plugin_discovery.h"
#include "host/roles/operator/workload_names.h"
#include "tests/support/build_paths.h"
#include "tests/support/free_port.h"
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

namespace fs = std::filesystem;
namespace json = sdk::json;

// The build's plugin directory (the example file plugin and the in-tree ones).
inline const char* const kPluginDir = PLUGIN_DIR;
// Where the images keep their plugins; the example file plugin's provider image
// (examples/file-provider/Containerfile, built by deploy/local/images) adds `file` there.
inline const char* const kImagePluginDir = "/usr/lib/banlieue/plugins";
inline const std::string kFileProviderImage = "localhost/banlieue-provider-file";
// The file backend's directory inside the provider pod: its /tmp, an emptyDir of the pod.
inline const char* const kBackendDir = "/tmp";
inline constexpr const char* kSystem = "banlieue-system";
inline constexpr auto kMint = std::chrono::seconds(60);
// The suite's operator reconciles nothing again unprompted for this long (`--resync-seconds`),
// longer than the whole suite: every write it makes answers a watch event.
inline constexpr auto kResync = std::chrono::seconds(3600);

// A kubeconfig for the cluster that authenticates with `token` only (no client certificate,
// which the apiserver would prefer).
inline fs::path tokenKubeconfig(const LocalCluster& cluster, std::string token,
                                const fs::path& path) {
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
    std::vector<rapidjson::Document> wanted;
    for (auto& object : roles::bootstrap::buildBootstrapObjects(options, *plugins)) {
      std::string kind = json::stringOr(&object, "kind", "");
      std::string name = json::stringOr(&object, "metadata.name", "");
      if (kind == "Namespace" || kind == "ServiceAccount" ||
          (kind == "CustomResourceDefinition" &&
           name.find(".file.example.com") != std::string::npos) ||
          (kind.find("Role") != std::string::npos &&
           (name.rfind("banlieue-operator", 0) == 0 || name == "banlieue-provider-file" ||
            name == "banlieue-provider" || name == "banlieue-infrastructure-file" ||
            name == "banlieue-provider-imports"))) {
        wanted.push_back(std::move(object));
      }
    }
    // Applied as `banlieue bootstrap` applies them (its field manager, forced, CRDs waited for
    // until Established), in this process: one kubectl apply per object cost about 0.6 s of
    // CPU each (kubectl reads the cluster's OpenAPI documents every time), 17 objects in each
    // of the operator test processes.
    auto applied = roles::bootstrap::applyAll(*client, wanted);
    ASSERT_TRUE(applied.ok()) << applied.status().message();

    // banlieue-operator is aggregated (docs/adr/0043): the controller-manager fills it from
    // the roles just applied, shortly after.
    ASSERT_TRUE(LocalCluster::eventually(
        [&] {
          return cluster
                     .kubectl(std::string("auth can-i delete filemachines.infrastructure.file."
                                          "example.com -A --as=system:serviceaccount:") +
                              kSystem + ":banlieue-operator")
                     .output == "yes\n";
        },
        std::chrono::seconds(30)))
        << "banlieue-operator was not aggregated";

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
    std::vector<std::string> args = {
        BANLIEUE_BINARY, "--log-level", "debug", "operator", "--kubeconfig", kubeconfig.string(),
        "--namespace", kSystem, "--plugin-dir", kPluginDir, "--image-plugin-dir", kImagePluginDir,
        "--health-port", std::to_string(health_port_), "--metrics-port", "-1",
        // No periodic pass during a test: whatever the operator
        // does, a watch event made it (see kResync).
        "--resync-seconds", std::to_string(kResync.count())};
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
        std::chrono::seconds(60)))
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

}  // namespace banlieue::testing
