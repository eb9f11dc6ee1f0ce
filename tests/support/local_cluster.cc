#include "tests/support/local_cluster.h"

#include "tests/support/build_paths.h"
#include "tests/support/stuck_namespaces.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <thread>

namespace banlieue::testing {
namespace {

std::string testName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "-" + info->name() : "test";
  std::string label;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      label.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!label.empty() && label.back() != '-') {
      label.push_back('-');
    }
  }
  if (label.size() > 50) label.resize(50);
  while (!label.empty() && label.back() == '-') label.pop_back();
  return label + "-" + std::to_string(::getpid() % 100000);
}

}  // namespace

std::string shellQuote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

CommandResult runCommand(const std::string& command_line, std::chrono::seconds timeout) {
  CommandResult result;
  std::string wrapped = "timeout -k 5 " + std::to_string(timeout.count()) + " sh -c " +
                        shellQuote(command_line) + " 2>&1";
  FILE* pipe = popen(wrapped.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string LocalCluster::kubectlBinary() {
  const char* pinned = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32";
  return ::access(pinned, X_OK) == 0 ? pinned : "kubectl";
}

struct ClusterStopper {
  ~ClusterStopper() {
    auto& cluster = LocalCluster::shared();
    if (!cluster.owned_state_.empty()) {
      runCommand(std::string(BANLIEUE_SOURCE_DIR) + "/deploy/local/down --purge --state-dir " +
                 shellQuote(cluster.owned_state_.string()));
    }
  }
};

LocalCluster& LocalCluster::shared() {
  static LocalCluster cluster;
  static bool started = [] {
    cluster.start();
    if (!cluster.kubeconfig_.empty()) cluster.installCrds();
    return true;
  }();
  (void)started;
  return cluster;
}

void LocalCluster::start() {
  if (const char* env = std::getenv("BANLIEUE_TEST_KUBECONFIG"); env && *env) {
    kubeconfig_ = env;
    return;
  }
  owned_state_ = std::filesystem::temp_directory_path() /
                 ("banlieue-test-cluster-" + std::to_string(::getpid()));
  auto up = runCommand(std::string(BANLIEUE_SOURCE_DIR) + "/deploy/local/up --state-dir " +
                           shellQuote(owned_state_.string()) + " --node --image-build-dir " +
                           shellQuote(BANLIEUE_BUILD_DIR),
                       std::chrono::seconds(600));
  if (up.exit_code != 0) {
    ADD_FAILURE() << "deploy/local/up failed:\n" << up.output;
    return;
  }
  kubeconfig_ = owned_state_ / "kubeconfig";
  static ClusterStopper stopper;
}

// Issue #3 item 3: the cluster serves banlieue's kinds whenever deploy/crds exists. Applied
// with bootstrap's field manager, so `banlieue bootstrap operator` finds them already its own.
void LocalCluster::installCrds() {
  std::filesystem::path crds = std::filesystem::path(BANLIEUE_SOURCE_DIR) / "deploy" / "crds";
  if (!std::filesystem::is_directory(crds)) return;
  // Every test process shares the cluster: a marker beside its kubeconfig, named after the
  // CRDs' content, saves re-applying them in each process once one has.
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(crds)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string content;
  for (const auto& f : files) {
    std::ifstream in(f);
    content.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto marker = kubeconfig_.parent_path() /
                ("banlieue-crds-" + std::to_string(std::hash<std::string>{}(content)));
  if (std::filesystem::exists(marker)) return;
  auto applied =
      kubectl("apply --server-side --force-conflicts --field-manager=banlieue.io/bootstrap -f " +
              shellQuote(crds.string()));
  if (applied.exit_code != 0) {
    ADD_FAILURE() << "installing " << crds.string() << " failed:\n" << applied.output;
    return;
  }
  auto established =
      kubectl("wait --for=condition=established --timeout=60s -f " + shellQuote(crds.string()),
              std::chrono::seconds(90));
  if (established.exit_code != 0) {
    ADD_FAILURE() << "CRDs in " << crds.string() << " not established:\n" << established.output;
    return;
  }
  std::ofstream(marker) << "applied\n";
}

std::string LocalCluster::podReachableAddress() const {
  // deploy/local/up keeps the node's addresses beside the kubeconfig, in run/node.env.
  auto env = kubeconfig_.parent_path() / "run" / "node.env";
  std::ifstream in(env);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("HOST_IP=", 0) == 0) return line.substr(8);
  }
  ADD_FAILURE() << "the cluster has no node (" << env.string() << " names no HOST_IP)";
  return {};
}

void LocalCluster::tagNodeImage(const std::string& image, const std::string& new_name) const {
  // deploy/local/node.sh: the node's containerd serves its socket under STATE/node, and the
  // kubelet's images live in its k8s.io namespace.
  auto socket = kubeconfig_.parent_path() / "node" / "containerd.sock";
  auto tagged = runCommand("ctr --address " + shellQuote(socket.string()) +
                           " --namespace k8s.io images tag --force " + shellQuote(image) + " " +
                           shellQuote(new_name));
  EXPECT_EQ(tagged.exit_code, 0) << "tagging " << image << " as " << new_name << " in "
                                 << socket.string() << ":\n"
                                 << tagged.output;
}

std::unique_ptr<kube::KubeClient> LocalCluster::client() const {
  auto connection = kube::loadKubeconfig({.files = {kubeconfig_}});
  if (!connection.ok()) {
    ADD_FAILURE() << connection.status().message();
    return nullptr;
  }
  auto transport = kube::makeHttpTransport(*connection);
  if (!transport.ok()) {
    ADD_FAILURE() << transport.status().message();
    return nullptr;
  }
  return kube::makeKubeClient(std::move(transport).value());
}

CommandResult LocalCluster::installCrd(const std::string& file, const std::string& crd_name) const {
  auto applied = kubectl("apply -f " + shellQuote(file));
  if (applied.exit_code != 0) return applied;
  return kubectl("wait --for=condition=Established --timeout=60s crd/" + crd_name);
}

CommandResult LocalCluster::installClusterApiCrds() const {
  // Server-side, forced: the tests that install them may run at once.
  auto applied = kubectl("apply --server-side --force-conflicts -f " +
                         shellQuote(std::string(build_paths::sourceDir()) +
                                    "/tests/integration/testdata/cluster-api-v1beta2-crds.yaml"));
  if (applied.exit_code != 0) return applied;
  return kubectl(
      "wait --for condition=Established --timeout=60s crd/clusters.cluster.x-k8s.io "
      "crd/machines.cluster.x-k8s.io crd/machinedeployments.cluster.x-k8s.io");
}

CommandResult LocalCluster::kubectl(const std::string& args, std::chrono::seconds timeout) const {
  return runCommand(
      kubectlBinary() + " --kubeconfig " + shellQuote(kubeconfig_.string()) + " " + args, timeout);
}

std::string LocalCluster::nodeDiagnostics() const {
  auto nodes = kubectl(
      "get nodes -o jsonpath='{range .items[*]}{.metadata.name}: {range .status.conditions[*]}"
      "{.type}={.status} {end}taints={.spec.taints}{\"\\n\"}{end}'");
  auto disk = runCommand("df -h " + shellQuote(kubeconfig_.parent_path().string()));
  return "--- node ---\n" + nodes.output + disk.output;
}

CommandResult LocalCluster::kubectlBanlieue(const std::string& args,
                                            std::chrono::seconds timeout) const {
  // In the build directory, beside the binary: one link for every test process (a process
  // that loses the race to create it finds it made).
  static const std::filesystem::path plugin_dir = [] {
    auto dir = std::filesystem::path(BANLIEUE_BINARY).parent_path() / "kubectl-plugin";
    std::error_code ignored;
    std::filesystem::create_directories(dir, ignored);
    std::filesystem::create_symlink(BANLIEUE_BINARY, dir / "kubectl-banlieue", ignored);
    return dir;
  }();
  return runCommand("KUBECONFIG=" + shellQuote(kubeconfig_.string()) +
                        " PATH=" + shellQuote(plugin_dir.string()) + ":\"$PATH\" " +
                        kubectlBinary() + " banlieue " + args,
                    timeout);
}

std::string LocalCluster::serviceAccountToken(const std::string& ns,
                                              const std::string& service_account) const {
  auto made =
      kubectl("create --raw /api/v1/namespaces/" + ns + "/serviceaccounts/" + service_account +
              "/token -f - <<'BANLIEUE_EOF'\n"
              R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",)"
              R"("spec":{"expirationSeconds":600}})"
              "\nBANLIEUE_EOF");
  std::smatch m;
  static const std::regex kToken(R"re("token"\s*:\s*"([^"]+)")re");
  if (made.exit_code != 0 || !std::regex_search(made.output, m, kToken)) {
    ADD_FAILURE() << "no token for serviceaccount " << ns << "/" << service_account << ": "
                  << made.output;
    return {};
  }
  return m[1];
}

CommandResult LocalCluster::apply(const std::string& manifest,
                                  const std::string& extra_args) const {
  return kubectl("apply " + extra_args + " -f - <<'BANLIEUE_EOF'\n" + manifest + "\nBANLIEUE_EOF");
}

LocalCluster::TestNamespace::TestNamespace(const LocalCluster& cluster)
    : client_(cluster.client()), name_(testName()) {
  // Through banlieue's client, not kubectl: a kubectl run costs about a quarter of a CPU second,
  // twice per test of a tier of hundreds.
  auto* client = client_.get();
  if (client == nullptr) return;
  // Once per test process (CTest runs each test in its own): see stuck_namespaces.h. Two minutes
  // is past any test's own wait for its objects to go.
  static bool swept = false;
  if (!swept) {
    swept = true;
    auto count = sweepStuckNamespaces(*client, std::chrono::minutes(2));
    if (count.objects > 0) {
      std::cerr << "local cluster: removed banlieue finalizers from " << count.objects
                << " objects in " << count.namespaces
                << " namespaces that earlier tests left Terminating\n";
    }
  }
  auto created = client->create(
      kube::resources::kNamespace, "",
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name_ + R"("}})");
  EXPECT_TRUE(created.ok()) << "creating namespace " << name_ << ": " << created.status().message();
}

LocalCluster::TestNamespace::~TestNamespace() {
  if (client_ != nullptr) (void)client_->remove(kube::resources::kNamespace, "", name_);
}

bool LocalCluster::eventually(const std::function<bool()>& probe,
                              std::chrono::milliseconds timeout) {
  // A fixed 200 ms. A pause growing to 500 ms was tried (2026-12-07) and bought no time in a
  // full run (1,937 s against 1,864 s); a state a test watches may last only a second or two.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return probe();
}

}  // namespace banlieue::testing
