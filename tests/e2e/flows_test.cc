// The seed's flows end to end, the way a user runs them: `banlieue bootstrap operator` installs
// the controller and the operator (Deployments the cluster's real node runs in containers of
// the image built from this tree), the operator mints each Provider's pod, and from then on the
// tests only kubectl apply/get/wait/patch/delete/exec. Backends: the libvirt plugin on
// libvirt's test driver (the simulated host the image ships; each provider pod holds its own
// in memory), the third-party example file plugin (a VM is a JSON file in the provider pod's
// /tmp, read with kubectl exec, so leaks and rendered userData are checked in the backend) and,
// for the swap across hypervisors, the vSphere plugin on the project's vcsim, listening where
// the pods reach this machine.
//
// The system is set up once by the first test of a process and shared; every test has its own
// namespace, Providers and VMs, and removes them before the next test starts. CTest runs the
// suites as separate tests (tests/e2e/CMakeLists.txt): FlowsTest (label flows) and
// ProviderImageTest (label node).
#include "host/common/base64.h"
#include "host/common/version.h"
#include "plugins/vsphere/src/xml.h"
#include "tests/e2e/echo_guest.h"
#include "tests/proxmox/fake_pve.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"
#include "tests/support/private_libvirtd.h"
#include "tests/vsphere/plugin_driver.h"
#include "tests/vsphere/vcsim.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>

#include <gtest/gtest.h>
#include <unistd.h>
#include <regex>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace banlieue::testing {
namespace {

namespace json = sdk::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// The plugins of this build: bootstrap describes one ProviderClass per plugin from them. The
// pods load the image's copies, under its plugin directory.
const char* const kBuildPluginDir = PLUGIN_DIR;
constexpr const char* kImagePluginDir = "/usr/lib/banlieue/plugins";
// The example file plugin's provider image (examples/file-provider/Containerfile, FROM
// banlieue's image), which deploy/local/images builds from this build and loads into the node.
const std::string kProviderFileImage = std::string("localhost/banlieue-provider-file:") + kVersion;
// The simulated libvirt host the image ships (deploy/dev/libvirt-test-node.xml): a dir pool
// `default` holding the image's volume, and a network `default`.
constexpr const char* kLibvirtTestHost = "test:///usr/share/banlieue/dev/libvirt-test-node.xml";
constexpr const char* kLibvirtPool = "default";
constexpr const char* kLibvirtNetwork = "default";
constexpr const char* kLibvirtVolume = "ubuntu-22.04.qcow2";
constexpr int kLibvirtVolumeGiB = 2;
constexpr const char* kSystem = "banlieue-system";
constexpr const char* kRoles[] = {"banlieue-controller", "banlieue-operator"};
// Bootstrap also installs the imagebuilder (Ready without kairos-operator's CRD too; the suite
// builds no Url image, so it does not wait for it), and the suite removes it with the rest.
constexpr const char* kAlsoInstalled[] = {"banlieue-imagebuilder"};
// Provider pods start on the node, load their plugin and introspect their backend.
constexpr auto kConverge = std::chrono::seconds(90);

// Space-separated words (kubectl's jsonpath output for a list).
std::multiset<std::string> words(const std::string& text) {
  std::multiset<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.insert(word);
  return out;
}

class FlowsTest : public ::testing::Test {
 protected:
  // Started by the first test's SetUp, not SetUpTestSuite: gtest turns a failure there into
  // skipped tests, which CTest would report as passed.
  void SetUp() override {
    if (!attempted_) {
      attempted_ = true;
      installSystem();
    }
    ASSERT_TRUE(ready_) << "banlieue was not installed; see the first test's failures";
  }

  static void installSystem() {
    auto& cluster = LocalCluster::shared();
    suffix_ = std::to_string(::getpid());

    // What a user runs: the pods load the plugins from the image.
    auto bootstrap = bootstrapCommand({});
    ASSERT_EQ(bootstrap.exit_code, 0) << bootstrap.output;
    // Rolled out, not merely Available: a Deployment left by an earlier bootstrap with other
    // arguments is Available while its old pod still runs.
    for (const auto* role : kRoles) {
      auto rolled = cluster.kubectl(
          std::string("rollout status --timeout=120s deployment/") + role + " -n " + kSystem,
          std::chrono::seconds(150));
      ASSERT_EQ(rolled.exit_code, 0) << rolled.output << systemState();
    }
    // The operator publishes each class's machine kind from the plugin's provider.json.
    ASSERT_TRUE(LocalCluster::eventually(
        [&] {
          return jsonpath(cluster, "providerclass file", "{.status.machineKind.kind}") ==
                     "FileMachine" &&
                 jsonpath(cluster, "providerclass libvirt", "{.status.machineKind.kind}") ==
                     "LibvirtMachine";
        },
        kConverge))
        << systemState();

    // One machine shape and one image for every test, written for libvirt; the file backend
    // accepts the same classes (the manifest never changes across a backend swap). The root
    // disk is as large as the simulated host's image volume: libvirt refuses to shrink it.
    auto shapes = cluster.apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: VMClass\n"
        "metadata: {name: " +
        vmClass() +
        "}\n"
        "spec:\n"
        "  hardware:\n"
        "    cpus: 1\n"
        "    memoryMiB: 256\n"
        "    disks: [{name: root, sizeGiB: " +
        std::to_string(kLibvirtVolumeGiB) +
        ", storageClass: std}]\n"
        "  network:\n"
        "    interfaces: [{name: eth0, networkClass: lan}]\n"
        "---\n"
        "apiVersion: banlieue.io/v1alpha1\nkind: VMImage\n"
        "metadata: {name: " +
        vmImage() +
        "}\n"
        "spec:\n"
        "  osFamily: linux\n"
        "  sources:\n"
        "    - {providerClass: libvirt, kind: BackingFile, ref: " +
        kLibvirtVolume +
        "}\n"
        "    - {providerClass: file, kind: BackingFile, ref: base.img}\n"
        "    - {providerClass: vsphere, kind: Template, ref: DC0_C0_RP0_VM0}\n");
    ASSERT_EQ(shapes.exit_code, 0) << shapes.output;
    ready_ = true;
  }

  // Removes what installSystem() created, so the integration tests that run later find
  // banlieue-system as they expect it (no controller or operator competing for their Leases).
  static void TearDownTestSuite() {
    auto& cluster = LocalCluster::shared();
    cluster.kubectl("delete vmclass " + vmClass() + " --ignore-not-found");
    cluster.kubectl("delete vmimage " + vmImage() + " --ignore-not-found");
    for (const char* role : {kRoles[0], kRoles[1], kAlsoInstalled[0]}) {
      cluster.kubectl(std::string("delete deployment ") + role + " --ignore-not-found -n " +
                      kSystem + " --wait=true --timeout=60s");
    }
    // A later suite of this process installs the system again.
    attempted_ = false;
    ready_ = false;
  }

  // Deletes the test's VMs and pools while the controller and the Providers' pods still run
  // (their finalizers remove the backend objects), then the Providers (the operator's
  // finalizer), then the namespace.
  void TearDown() override {
    removeWorkloads();
    for (const auto& o : cluster_objects_) cluster_.kubectl("delete " + o + " --wait=false");
    if (HasFailure()) {
      for (const auto& ns : namespaces_) std::cerr << namespaceState(ns);
      std::cerr << systemState();
    }
  }

  // The test namespaces' pools, VMs and Providers, each kind gone before the next (idempotent).
  void removeWorkloads() {
    for (const auto& ns : namespaces_) {
      // Pools first: members deleted with them would otherwise race the Providers' removal.
      cluster_.kubectl("delete virtualmachinepools --all --wait=true --timeout=60s -n " + ns,
                       std::chrono::seconds(90));
      cluster_.kubectl("delete virtualmachines --all --wait=true --timeout=90s -n " + ns,
                       std::chrono::seconds(120));
      cluster_.kubectl("delete providers --all --wait=true --timeout=60s -n " + ns,
                       std::chrono::seconds(90));
    }
  }

  // Every role and every bootstrapped ProviderClass runs the file plugin's provider image
  // rather than banlieue's own: bootstrap gives the roles and the classes it describes one
  // --image, and its `file` class needs the file plugin in it. The provider image is banlieue's
  // plus the plugin, so the roles run the same code. (ThirdPartyBackendTest adds a class whose
  // plugin is in no image but its own.)
  static CommandResult bootstrapCommand(const std::vector<std::string>& extra) {
    std::string command = shellQuote(BANLIEUE_BINARY) + " bootstrap operator --kubeconfig " +
                          shellQuote(LocalCluster::shared().kubeconfig().string()) +
                          " --plugin-dir " + shellQuote(kBuildPluginDir) + " --image " +
                          shellQuote(kProviderFileImage);
    for (const auto& arg : extra) command += " " + shellQuote(arg);
    // Bootstrap waits for the rollout, up to its --wait-timeout (300 s).
    return runCommand(command, std::chrono::seconds(360));
  }

  static std::string vmClass() { return "e2e-" + suffix_; }
  static std::string vmImage() { return "e2e-" + suffix_; }

  static std::string jsonpath(const LocalCluster& cluster, const std::string& what,
                              const std::string& path) {
    auto r = cluster.kubectl("get " + what + " -o jsonpath='" + path + "'");
    return r.exit_code == 0 ? r.output : "<error: " + r.output + ">";
  }
  std::string get(const std::string& what, const std::string& path) const {
    return jsonpath(cluster_, what, path);
  }
  // True once the operator publishes ProviderClass `cls`'s machine kind `kind` (its plugin
  // read), within kConverge.
  bool classServes(const std::string& cls, const std::string& kind) const {
    return LocalCluster::eventually(
        [&] { return get("providerclass " + cls, "{.status.machineKind.kind}") == kind; },
        kConverge);
  }
  bool exists(const std::string& what) const {
    return cluster_.kubectl("get " + what + " -o name").exit_code == 0;
  }

  static std::string systemState() {
    auto& cluster = LocalCluster::shared();
    return "\n--- banlieue-system:\n" +
           cluster.kubectl(std::string("get deployments,pods -o wide -n ") + kSystem).output +
           cluster.kubectl("get providerclasses").output + cluster.nodeDiagnostics();
  }
  std::string namespaceState(const std::string& ns) const {
    return "\n--- namespace " + ns + ":\n" +
           cluster_
               .kubectl(
                   "get providers,virtualmachines,virtualmachinepools,filemachines,"
                   "libvirtmachines,vspheremachines,pods -o yaml "
                   "-n " +
                   ns)
               .output +
           cluster_.kubectl("get events -n " + ns).output;
  }

  // A namespace of this test, cleaned up by TearDown.
  std::string useNamespace(const LocalCluster::TestNamespace& ns) {
    namespaces_.push_back(ns.name());
    return ns.name();
  }

  // A file Provider's backend: the directory its endpoint names, inside the Provider's pod.
  struct FileBackend {
    std::string ns;
    std::string provider;
    std::string provider_class;
    std::string dir;
  };

  // A Provider of a file class (the bootstrapped `file` unless told) whose VMs are files in
  // /tmp/<name> of its pod: an emptyDir of the pod's own, where the plugin makes the directory.
  FileBackend fileProvider(const std::string& ns, const std::string& name,
                           const std::string& labels,
                           const std::string& options = "?createSeconds=0",
                           const std::string& provider_class = "file") {
    FileBackend backend{ns, name, provider_class, "/tmp/" + name};
    applyProvider(ns, name, provider_class, labels, "file://" + backend.dir + options,
                  "    storageClasses: [{name: std}]\n"
                  "    networkClasses: [{name: lan}]\n");
    return backend;
  }

  // A Provider of the bootstrapped `libvirt` class on the image's simulated host; each
  // Provider's pod holds a host of its own.
  void libvirtProvider(const std::string& ns, const std::string& name, const std::string& labels) {
    applyProvider(ns, name, "libvirt", labels, kLibvirtTestHost,
                  std::string("    storageClasses: [{name: std, target: {pool: ") + kLibvirtPool +
                      "}}]\n"
                      "    networkClasses: [{name: lan, target: {network: " +
                      kLibvirtNetwork + "}}]\n");
  }

  // A ProviderClass `name` running `backend` from the provider image `image_ref` (its plugin
  // directory named for the backend), and a VMImage of the same name it can boot (VMImage
  // sources are per ProviderClass). pullPolicy Never: the pod starts only from the image the
  // node holds under that name.
  void applyImageClass(const std::string& name, const std::string& backend,
                       const std::string& image_ref) {
    cluster_objects_.push_back("providerclass/" + name);
    cluster_objects_.push_back("vmimage/" + name);
    const auto colon = image_ref.rfind(':');
    auto created = cluster_.apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\n"
        "metadata: {name: " +
        name + "}\nspec:\n  backend: " + backend + "\n  plugin: {path: " + backend +
        "}\n  image: {repository: " + image_ref.substr(0, colon) + ", tag: \"" +
        image_ref.substr(colon + 1) +
        "\", pullPolicy: Never}\n"
        "---\n"
        "apiVersion: banlieue.io/v1alpha1\nkind: VMImage\n"
        "metadata: {name: " +
        name + "}\nspec:\n  osFamily: linux\n  sources: [{providerClass: " + name +
        ", kind: BackingFile, ref: base.img}]\n");
    ASSERT_EQ(created.exit_code, 0) << created.output;
  }

  void applyProvider(const std::string& ns, const std::string& name, const std::string& cls,
                     const std::string& labels, const std::string& endpoint,
                     const std::string& capabilities) {
    auto r = cluster_.apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: Provider\n"
        "metadata: {name: " +
        name + ", namespace: " + ns + ", labels: {" + labels +
        "}}\n"
        "spec:\n"
        "  providerClassRef: {name: " +
        cls +
        "}\n"
        "  connection: {endpoint: \"" +
        endpoint + "\"" +
        // libvirt's test driver simulates its VMs: a Provider must allow it explicitly.
        (endpoint.rfind("test://", 0) == 0 ? ", allowTestDriver: true" : "") +
        "}\n"
        "  capabilities:\n" +
        capabilities);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // kubectl wait for a condition; true when it held within `seconds`.
  bool waitFor(const std::string& ns, const std::string& what, const std::string& condition,
               int seconds = 90) {
    auto r = cluster_.kubectl("wait --for=condition=" + condition + " --timeout=" +
                                  std::to_string(seconds) + "s " + what + " -n " + ns,
                              std::chrono::seconds(seconds + 30));
    if (r.exit_code != 0) std::cerr << "kubectl wait " << what << ": " << r.output << "\n";
    return r.exit_code == 0;
  }

  // The user's VirtualMachine: the shared class and image unless told, placed by a provider
  // selector.
  void applyVm(const std::string& ns, const std::string& name, const std::string& match_labels,
               const std::string& extra_spec = "", const std::string& class_name = "",
               const std::string& image_name = "") {
    auto r = cluster_.apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\n"
        "metadata: {name: " +
        name + ", namespace: " + ns +
        "}\n"
        "spec:\n"
        "  classRef: {name: " +
        (class_name.empty() ? vmClass() : class_name) +
        "}\n"
        "  imageRef: {name: " +
        (image_name.empty() ? vmImage() : image_name) +
        "}\n"
        "  placement:\n"
        "    providerSelector:\n"
        "      matchLabels: {" +
        match_labels + "}\n" + extra_spec);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // The VM's condition `type` as "status/reason".
  std::string condition(const std::string& ns, const std::string& vm, const std::string& type) {
    return get("bvm " + vm + " -n " + ns, "{.status.conditions[?(@.type==\"" + type +
                                              "\")].status}/"
                                              "{.status.conditions[?(@.type==\"" +
                                              type + "\")].reason}");
  }

  // `command` in the Provider's pod, the way a user looks into a backend: kubectl exec into
  // the Deployment the operator minted for it (the image has coreutils).
  CommandResult execInProvider(const FileBackend& backend, const std::string& command) const {
    return cluster_.kubectl("exec -n " + backend.ns + " deploy/banlieue-provider-" +
                            backend.provider_class + "-" + backend.provider + " -- " + command);
  }

  // The names of the VMs' files in a file backend's directory (its own `calls` count left
  // out); null when the pod could not be asked.
  std::optional<std::set<std::string>> backendEntries(const FileBackend& backend) const {
    auto r = execInProvider(backend, "ls -A " + backend.dir);
    if (r.exit_code != 0) {
      std::cerr << "ls " << backend.dir << " in " << backend.ns << "/" << backend.provider
                << "'s pod: " << r.output << "\n";
      return std::nullopt;
    }
    std::set<std::string> names;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line != "calls") names.insert(line);
    }
    return names;
  }

  // The backend file of a VM on a file Provider, read in its pod and parsed; null when absent
  // or unreadable.
  std::optional<rapidjson::Document> backendFile(const FileBackend& backend,
                                                 const std::string& vm) const {
    std::string file = backend.dir + "/" + backend.ns + "_" + vm + ".json";
    auto r = execInProvider(backend, "cat " + file);
    if (r.exit_code != 0) return std::nullopt;
    try {
      return json::parse(r.output, file);
    } catch (const std::exception&) {
      return std::nullopt;  // replaced while being read: the caller polls again
    }
  }

  // The VM's spec without its placement: what a backend swap must leave as it was.
  std::string specWithoutPlacement(const std::string& ns, const std::string& vm) {
    auto r = cluster_.kubectl("get bvm " + vm + " -n " + ns + " -o json");
    if (r.exit_code != 0) return "<error: " + r.output + ">";
    auto doc = json::parse(r.output, "vm");
    auto& spec = doc["spec"];
    spec.RemoveMember("placement");
    return json::serialize(spec);
  }

  // A ServiceAccount `account` of `ns` granted its VMs' consoles and nothing else (docs/adr/0040):
  // the admin's kubeconfig holds a client certificate, which the console server cannot verify.
  std::string consoleToken(const std::string& ns, const std::string& account = "on-call") {
    auto granted = cluster_.apply(R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: )" + account + R"(, namespace: )" +
                                  ns + R"(}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: vm-console, namespace: )" +
                                  ns + R"(}
rules:
- {apiGroups: [banlieue.io], resources: [virtualmachines/console], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: vm-console, namespace: )" +
                                  ns + R"(}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: vm-console}
subjects:
- {kind: ServiceAccount, name: )" +
                                  account + R"(, namespace: )" + ns + R"(}
)");
    EXPECT_EQ(granted.exit_code, 0) << granted.output;
    return cluster_.serviceAccountToken(ns, account);
  }

  // Every pod of banlieue's roles (and of `ns`'s Providers) Running and never restarted.
  void expectNoCrash(const std::string& ns) {
    for (const std::string& where : {std::string(kSystem), ns}) {
      auto pods = get("pods -n " + where,
                      "{range .items[*]}{.metadata.name} {.status.phase} "
                      "{.status.containerStatuses[0].restartCount}{\"\\n\"}{end}");
      std::istringstream lines(pods);
      int seen = 0;
      for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        ++seen;
        EXPECT_THAT(line, ::testing::EndsWith(" Running 0")) << where;
      }
      EXPECT_GT(seen, 0) << "no pods in " << where << ": " << pods;
    }
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  std::vector<std::string> namespaces_;
  std::vector<std::string> cluster_objects_;  // kind/name of cluster-scoped objects to delete

  static inline std::string suffix_;
  static inline bool attempted_ = false;
  static inline bool ready_ = false;
};

// Create → Ready on libvirt, then power off and on: the VM's desiredPowerState reaches the
// infra CR and the test-driver domain, whose state comes back as observedPowerState.
TEST_F(FlowsTest, CreateToReadyThenPowerOffAndOn) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  libvirtProvider(ns, "host1", "dc: dc1, env: prod");
  applyVm(ns, "db-01", "dc: dc1, env: prod");
  ASSERT_TRUE(waitFor(ns, "bvm/db-01", "Ready"));
  EXPECT_EQ(condition(ns, "db-01", "Ready"), "True/Reconciled");
  EXPECT_EQ(get("bvm db-01 -n " + ns,
                "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}/"
                "{.status.observedPowerState}"),
            "host1/LibvirtMachine/PoweredOn");
  // The infra CR the controller wrote and the provider runtime reports on.
  EXPECT_EQ(get("libvirtmachine db-01 -n " + ns,
                "{.metadata.labels.banlieue\\.io/provider}/"
                "{.metadata.labels.banlieue\\.io/owned-by}/{.spec.domainName}/"
                "{.spec.bootSource.volume}/{.spec.pool}/{.metadata.finalizers}"),
            "host1/db-01/" + ns + "-db-01/" + kLibvirtVolume + "/" + kLibvirtPool +
                "/[\"banlieue.io/provider-libvirt\"]");
  std::string provider_id = get("libvirtmachine db-01 -n " + ns, "{.spec.providerID}");
  EXPECT_THAT(provider_id, ::testing::StartsWith("libvirt://"));

  // Through the verbs a person uses, as a kubectl plugin (issue #20): each waits until the
  // VM's status says it was done.
  auto verb = [&](const std::string& what) {
    auto r = cluster_.kubectlBanlieue("vm " + what + " db-01 -n " + ns + " --timeout 120",
                                      std::chrono::seconds(150));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, ::testing::HasSubstr(what + " done")) << r.output;
    return r.exit_code;
  };
  ASSERT_EQ(verb("stop"), 0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("libvirtmachine db-01 -n " + ns,
                   "{.spec.desiredPowerState}/{.status.observedPowerState}") ==
                   "PoweredOff/PoweredOff" &&
               get("bvm db-01 -n " + ns, "{.status.observedPowerState}") == "PoweredOff";
      },
      kConverge));
  // The same domain (not a new one) was stopped.
  EXPECT_EQ(get("libvirtmachine db-01 -n " + ns, "{.spec.providerID}"), provider_id);
  ASSERT_EQ(verb("start"), 0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("libvirtmachine db-01 -n " + ns, "{.status.observedPowerState}") ==
                   "PoweredOn" &&
               get("bvm db-01 -n " + ns, "{.status.observedPowerState}") == "PoweredOn";
      },
      kConverge));
  EXPECT_TRUE(waitFor(ns, "bvm/db-01", "Ready"));
  EXPECT_EQ(get("libvirtmachine db-01 -n " + ns, "{.spec.providerID}"), provider_id);

  // A restart: one request, answered on the VM, the same domain, and the request leaves the
  // machine's spec once answered (a later machine will not restart for it).
  ASSERT_EQ(verb("restart"), 0);
  const std::string requested = get("bvm db-01 -n " + ns, "{.spec.restartRequestedAt}");
  EXPECT_FALSE(requested.empty());
  EXPECT_EQ(
      get("bvm db-01 -n " + ns, "{.status.lastRestart.requestedAt}/{.status.lastRestart.outcome}"),
      requested + "/Restarted");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return get("libvirtmachine db-01 -n " + ns, "{.spec.restartRequestedAt}").empty(); },
      kConverge));
  EXPECT_EQ(get("libvirtmachine db-01 -n " + ns, "{.spec.providerID}"), provider_id);
  EXPECT_EQ(get("bvm db-01 -n " + ns, "{.status.observedPowerState}"), "PoweredOn");
}

// Power state and the serial console on the file backend, where the backend's own record can
// be read.
TEST_F(FlowsTest, PowerStateAndTheSerialConsoleReachTheBackend) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  auto files = fileProvider(ns, "files", "tier: files");
  applyVm(ns, "app-01", "tier: files", "  desiredPowerState: PoweredOff\n");
  ASSERT_TRUE(waitFor(ns, "bvm/app-01", "Ready"));
  auto state = [&] {
    auto vm = backendFile(files, "app-01");
    return vm ? json::stringOr(&*vm, "state") : std::string("<no backend file>");
  };
  EXPECT_EQ(state(), "stopped");
  EXPECT_EQ(get("bvm app-01 -n " + ns, "{.status.observedPowerState}"), "PoweredOff");
  // A restart of a VM that is off is answered NotRunning and starts nothing (issue #20).
  auto restart = cluster_.kubectlBanlieue("vm restart app-01 -n " + ns + " --timeout 60",
                                          std::chrono::seconds(90));
  EXPECT_EQ(restart.exit_code, 0) << restart.output;
  EXPECT_EQ(get("bvm app-01 -n " + ns, "{.status.lastRestart.outcome}"), "NotRunning");
  EXPECT_EQ(state(), "stopped");
  cluster_.kubectl("patch bvm app-01 -n " + ns +
                   " --type=merge -p '{\"spec\":{\"desiredPowerState\":\"PoweredOn\"}}'");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return state() == "running" &&
               get("bvm app-01 -n " + ns, "{.status.observedPowerState}") == "PoweredOn";
      },
      kConverge))
      << state();
  // Running, it restarts once: the backend's own record counts it.
  restart = cluster_.kubectlBanlieue("vm restart app-01 -n " + ns + " --timeout 60",
                                     std::chrono::seconds(90));
  EXPECT_EQ(restart.exit_code, 0) << restart.output;
  EXPECT_EQ(get("bvm app-01 -n " + ns, "{.status.lastRestart.outcome}"), "Restarted");
  auto vm = backendFile(files, "app-01");
  ASSERT_TRUE(vm.has_value());
  EXPECT_EQ(json::integer(&*vm, "restarts").value_or(-1), 1) << json::serialize(*vm);

  // Its serial console, as a person opens it (docs/adr/0040): `kubectl banlieue vm console`
  // reaches the leading provider pod through the apiserver's pods/portforward, as a
  // ServiceAccount granted get on virtualmachines/console and nothing else; what is typed
  // reaches the backend's own trace (<vm file>.console in the pod).
  const std::string token = consoleToken(ns, "operator-on-call");
  auto console = cluster_.kubectlBanlieue("vm console app-01 -n " + ns + " --token " + token +
                                              " --timeout 8 <<'BANLIEUE_EOF'\nroot\nBANLIEUE_EOF",
                                          std::chrono::seconds(60));
  EXPECT_EQ(console.exit_code, 0) << console.output
                                  << cluster_
                                         .kubectl("get pods -n " + ns +
                                                  " -o jsonpath='{range .items[*]}{.metadata.name} "
                                                  "{.status.conditions}{\"\\n\"}{end}'")
                                         .output;
  EXPECT_THAT(console.output, HasSubstr("file VM app-01 serial console"));
  EXPECT_THAT(console.output, HasSubstr("app-01 login: root"));
  auto trace = execInProvider(files, "cat " + files.dir + "/" + ns + "_app-01.json.console");
  EXPECT_EQ(trace.output, "root\n") << trace.output;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return cluster_
               .kubectl("get events -n " + ns +
                        " --field-selector involvedObject.name=app-01,reason=ConsoleClosed")
               .output.find("operator-on-call's serial console closed") != std::string::npos;
  })) << cluster_.kubectl("get events -n " + ns).output;
}

// Delete: the VM waits for the provider's finalizer, which removes the backend object first.
TEST_F(FlowsTest, DeleteLeavesNoBackendObject) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  auto files = fileProvider(ns, "files", "tier: files");
  libvirtProvider(ns, "host1", "tier: libvirt");
  applyVm(ns, "on-files", "tier: files");
  applyVm(ns, "on-libvirt", "tier: libvirt");
  ASSERT_TRUE(waitFor(ns, "bvm/on-files", "Ready"));
  ASSERT_TRUE(waitFor(ns, "bvm/on-libvirt", "Ready"));
  ASSERT_TRUE(backendFile(files, "on-files").has_value());
  EXPECT_EQ(get("bvm on-files -n " + ns, "{.metadata.finalizers}"),
            "[\"banlieue.io/virtualmachine\"]");
  EXPECT_EQ(get("filemachine on-files -n " + ns, "{.metadata.finalizers}"),
            "[\"banlieue.io/provider-file\"]");

  auto deleted = cluster_.kubectl("delete bvm on-files on-libvirt --timeout=90s -n " + ns,
                                  std::chrono::seconds(120));
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  // `kubectl delete` returned once the VMs were gone: their infra CRs went first.
  auto left = backendEntries(files);
  ASSERT_TRUE(left.has_value());
  EXPECT_THAT(*left, Not(Contains(ns + "_on-files.json")));
  EXPECT_THAT(*left, Not(Contains(ns + "_on-files.json.creating")));
  EXPECT_EQ(get("filemachines,libvirtmachines -n " + ns, "{.items[*].metadata.name}"), "");

  // The test-driver domain lives in the provider process: a new VM of the same name (a new
  // infra CR, so a new domain uuid) would collide with a leftover domain of that name.
  applyVm(ns, "on-libvirt", "tier: libvirt");
  EXPECT_TRUE(waitFor(ns, "bvm/on-libvirt", "Ready")) << namespaceState(ns);
  EXPECT_THAT(get("libvirtmachine on-libvirt -n " + ns, "{.status.conditions}"),
              Not(HasSubstr("DomainNameConflict")));
}

// Backend swap between two libvirt hosts: only the selector changes, the VM converges on the
// other Provider and the first host's domain is gone (swapping back creates it anew).
TEST_F(FlowsTest, SwapBetweenTwoLibvirtProviders) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  libvirtProvider(ns, "host-a", "dc: a");
  libvirtProvider(ns, "host-b", "dc: b");
  applyVm(ns, "web-01", "dc: a");
  ASSERT_TRUE(waitFor(ns, "bvm/web-01", "Ready"));
  ASSERT_EQ(get("bvm web-01 -n " + ns, "{.status.scheduled.providerName}"), "host-a");
  std::string first_id = get("libvirtmachine web-01 -n " + ns, "{.spec.providerID}");
  const std::string spec_before = specWithoutPlacement(ns, "web-01");

  auto swapTo = [&](const std::string& dc) {
    auto r = cluster_.kubectl(
        "patch bvm web-01 -n " + ns +
        " --type=merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{\"matchLabels\":{"
        "\"dc\":\"" +
        dc + "\"}}}}}'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  };
  auto convergedOn = [&](const std::string& provider) {
    return get("bvm web-01 -n " + ns,
               "{.status.scheduled.providerName}/"
               "{.status.conditions[?(@.type==\"Ready\")].status}") == provider + "/True" &&
           get("libvirtmachine web-01 -n " + ns, "{.spec.providerRef.name}") == provider;
  };
  swapTo("b");
  EXPECT_TRUE(LocalCluster::eventually([&] { return convergedOn("host-b"); }, kConverge));
  std::string second_id = get("libvirtmachine web-01 -n " + ns, "{.spec.providerID}");
  EXPECT_NE(second_id, first_id);
  EXPECT_EQ(specWithoutPlacement(ns, "web-01"), spec_before);
  EXPECT_EQ(
      get("bvm web-01 -n " + ns, "{.status.conditions[?(@.type==\"PlacementValid\")].reason}"),
      "PlacementValid");

  // Back to host-a: its old domain (same name, the first infra CR's uuid) must be gone, or the
  // new infra CR would fail with DomainNameConflict.
  swapTo("a");
  EXPECT_TRUE(LocalCluster::eventually([&] { return convergedOn("host-a"); }, kConverge));
  EXPECT_NE(get("libvirtmachine web-01 -n " + ns, "{.spec.providerID}"), first_id);
  EXPECT_EQ(specWithoutPlacement(ns, "web-01"), spec_before);
}

// Swap from libvirt to the third-party example plugin: handled exactly like an in-tree backend.
TEST_F(FlowsTest, SwapFromLibvirtToTheThirdPartyFilePlugin) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  libvirtProvider(ns, "host1", "site: lab, backend: libvirt");
  auto files = fileProvider(ns, "files", "site: lab, backend: file");
  applyVm(ns, "svc-01", "site: lab, backend: libvirt");
  ASSERT_TRUE(waitFor(ns, "bvm/svc-01", "Ready"));
  EXPECT_EQ(get("bvm svc-01 -n " + ns, "{.status.infrastructureRef.kind}"), "LibvirtMachine");
  const std::string spec_before = specWithoutPlacement(ns, "svc-01");

  auto r = cluster_.kubectl("patch bvm svc-01 -n " + ns +
                            " --type=merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{"
                            "\"matchLabels\":{\"backend\":\"file\"}}}}}'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("bvm svc-01 -n " + ns,
                   "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}/"
                   "{.status.conditions[?(@.type==\"Ready\")].status}") ==
                   "files/FileMachine/True" &&
               !exists("libvirtmachine svc-01 -n " + ns);
      },
      kConverge));
  EXPECT_EQ(specWithoutPlacement(ns, "svc-01"), spec_before);
  // What a user sees (issue #22): kubectl 1.32's `get bvm` shows the Provider, the Ready reason
  // and the address the file plugin reports.
  // NAME CLASS IMAGE PROVIDER FAILURE-DOMAIN POWER READY REASON IP AGE
  const std::regex row(
      "svc-01 +\\S+ +\\S+ +files +\\S+ +PoweredOn +True +Reconciled +127\\.0\\.0\\.1 ");
  std::string table;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        table = cluster_.kubectl("get bvm svc-01 -n " + ns).output;
        return std::regex_search(table, row);
      },
      kConverge))
      << table;
  auto vm = backendFile(files, "svc-01");
  ASSERT_TRUE(vm.has_value());
  EXPECT_EQ(json::stringOr(&*vm, "state"), "running");
  EXPECT_EQ(json::integer(&*vm, "cpus").value_or(0), 1);
  EXPECT_EQ(json::integer(&*vm, "memoryMiB").value_or(0), 256);
  // The same labels and ownership as an in-tree infra CR.
  EXPECT_EQ(get("filemachine svc-01 -n " + ns,
                "{.metadata.labels.banlieue\\.io/provider}/"
                "{.metadata.labels.banlieue\\.io/owned-by}/{.metadata.ownerReferences[0].kind}/"
                "{.spec.image.ref}"),
            "files/svc-01/VirtualMachine/base.img");
}

// Swap across hypervisors: libvirt (test driver) to vSphere (vcsim on the address the pods
// reach, TLS verified against the Provider's inline CA, login from its credentials Secret) and
// back, the manifest unchanged but for the selector. Each side's backend VM exists exactly
// while the VM is placed there.
TEST_F(FlowsTest, SwapFromLibvirtToVSphereAndBack) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  ASSERT_TRUE(classServes("vsphere", "VSphereMachine"));
  // Where the Provider's pod reaches this machine, with a certificate for that address.
  const std::string address = cluster_.podReachableAddress();
  ASSERT_FALSE(address.empty());
  vsphere::testing::Vcsim vcsim({}, address);
  vsphere::testing::Backend vcenter(vcsim);
  const std::set<std::string> vcenter_before = vcenter.vmNames();

  libvirtProvider(ns, "kvm", "backend: libvirt");
  auto applied =
      cluster_.apply("apiVersion: v1\nkind: Secret\nmetadata: {name: vc-creds, namespace: " + ns +
                     "}\nstringData: {username: \"" + vsphere::testing::Vcsim::kUser +
                     "\", password: \"" + vsphere::testing::Vcsim::kPassword +
                     "\"}\n---\napiVersion: banlieue.io/v1alpha1\nkind: Provider\n"
                     "metadata: {name: vcenter, namespace: " +
                     ns +
                     ", labels: {backend: vsphere}}\n"
                     "spec:\n"
                     "  providerClassRef: {name: vsphere}\n"
                     "  connection: " +
                     vcsim.providerConnection("vc-creds") +
                     "\n"
                     "  capabilities:\n"
                     "    storageClasses: [{name: std, target: {datastore: LocalDS_0}}]\n"
                     "    networkClasses: [{name: lan, target: {portGroup: VM Network}}]\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(waitFor(ns, "provider/vcenter", "Ready"));

  applyVm(ns, "db-01", "backend: libvirt");
  ASSERT_TRUE(waitFor(ns, "bvm/db-01", "Ready"));
  const std::string spec_before = specWithoutPlacement(ns, "db-01");
  auto swapTo = [&](const std::string& backend) {
    auto r = cluster_.kubectl("patch bvm db-01 -n " + ns +
                              " --type=merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{"
                              "\"matchLabels\":{\"backend\":\"" +
                              backend + "\"}}}}}'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  };
  auto placedOn = [&](const std::string& provider, const std::string& kind) {
    return get("bvm db-01 -n " + ns,
               "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}/"
               "{.status.conditions[?(@.type==\"Ready\")].status}") ==
           provider + "/" + kind + "/True";
  };
  auto newOnVcenter = [&] {
    std::set<std::string> added;
    for (const auto& name : vcenter.vmNames()) {
      if (!vcenter_before.count(name)) added.insert(name);
    }
    return added;
  };

  swapTo("vsphere");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return placedOn("vcenter", "VSphereMachine") && !exists("libvirtmachine db-01 -n " + ns);
      },
      std::chrono::seconds(180)))
      << namespaceState(ns);
  EXPECT_EQ(specWithoutPlacement(ns, "db-01"), spec_before);
  EXPECT_EQ(newOnVcenter().size(), 1u) << ::testing::PrintToString(newOnVcenter());
  EXPECT_EQ(get("vspheremachine db-01 -n " + ns, "{.spec.template}/{.spec.datastore}"),
            "DC0_C0_RP0_VM0/LocalDS_0");

  swapTo("libvirt");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return placedOn("kvm", "LibvirtMachine") && !exists("vspheremachine db-01 -n " + ns) &&
               newOnVcenter().empty();
      },
      std::chrono::seconds(180)))
      << namespaceState(ns) << ::testing::PrintToString(newOnVcenter());
  EXPECT_EQ(specWithoutPlacement(ns, "db-01"), spec_before);
  // Before vcsim goes: the VM and the Providers, while their pods can still reach it.
  removeWorkloads();
}

// Registration: each Provider of a class gets its own workload and reports Ready with its
// failure domains; one edit of the class's image tag rolls every Provider's Deployment.
TEST_F(FlowsTest, ProviderRegistrationAndClassUpgradeFanOut) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  const std::string cls = "e2e-fleet-" + suffix_;
  cluster_objects_.push_back("providerclass/" + cls);
  // Releases 1.0.0 and 1.1.0 of the provider image, as a registry would hold them: the node
  // runs only images its containerd has.
  const std::string repository = "localhost/banlieue-provider-file";
  for (const char* tag : {"1.0.0", "1.1.0"}) {
    cluster_.tagNodeImage(kProviderFileImage, repository + ":" + tag);
  }
  auto created = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\n"
      "metadata: {name: " +
      cls +
      "}\n"
      "spec:\n"
      "  backend: file\n"
      "  plugin: {path: " +
      std::string(kImagePluginDir) +
      "/file}\n"
      "  image: {repository: " +
      repository + ", tag: \"1.0.0\"}\n");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  std::vector<std::string> providers = {"east", "west"};
  for (const auto& p : providers) {
    applyProvider(ns, p, cls, "fleet: one", "file:///tmp/" + p,
                  "    storageClasses: [{name: std}]\n");
  }
  auto image = [&](const std::string& p) {
    return get("deployment banlieue-provider-" + cls + "-" + p + " -n " + ns,
               "{.spec.template.spec.containers[0].image}");
  };
  for (const auto& p : providers) {
    EXPECT_TRUE(waitFor(ns, "provider/" + p, "Ready"));
    // The operator mirrors the pod's readiness once the Deployment reports it.
    EXPECT_TRUE(LocalCluster::eventually(
        [&] {
          return get("provider " + p + " -n " + ns,
                     "{.status.failureDomains[*].name}/{.status.workload.mode}/"
                     "{.status.workload.readyReplicas}") == "local/Managed/1";
        },
        kConverge))
        << get("provider " + p + " -n " + ns, "{.status}");
    EXPECT_EQ(image(p), repository + ":1.0.0");
  }
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return get("providerclass " + cls, "{.status.providers}") == "2"; }, kConverge));

  auto patched = cluster_.kubectl("patch providerclass " + cls +
                                  " --type=merge -p '{\"spec\":{\"image\":{\"tag\":\"1.1.0\"}}}'");
  ASSERT_EQ(patched.exit_code, 0) << patched.output;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return image("east") == repository + ":1.1.0" && image("west") == repository + ":1.1.0";
      },
      kConverge))
      << image("east") << " " << image("west");
  // The rolled pods run the new template and the Providers are Ready again.
  for (const auto& p : providers) {
    auto rolled = cluster_.kubectl(
        "rollout status --timeout=90s deployment/banlieue-provider-" + cls + "-" + p + " -n " + ns,
        std::chrono::seconds(120));
    EXPECT_EQ(rolled.exit_code, 0) << rolled.output;
    EXPECT_TRUE(waitFor(ns, "provider/" + p, "Ready"));
  }
}

// A pool's members spread over the failure domains of a Provider through the template's
// anti-affinity: three zones, three warm members, one in each.
TEST_F(FlowsTest, PoolSpreadsOverFailureDomains) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  fileProvider(ns, "zones", "tier: pool", "?createSeconds=0&zones=za,zb,zc");
  ASSERT_TRUE(waitFor(ns, "provider/zones", "Ready"));
  EXPECT_EQ(get("provider zones -n " + ns, "{.status.failureDomains[*].name}"), "za zb zc");
  auto r = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachinePool\n"
      "metadata: {name: sandboxes, namespace: " +
      ns +
      "}\n"
      "spec:\n"
      "  warmReplicas: 3\n"
      "  maxReplicas: 5\n"
      "  readiness: InfrastructureReady\n"
      "  template:\n"
      "    labels: {app: sandbox}\n"
      "    spec:\n"
      "      classRef: {name: " +
      vmClass() +
      "}\n"
      "      imageRef: {name: " +
      vmImage() +
      "}\n"
      "      placement:\n"
      "        providerSelector: {matchLabels: {tier: pool}}\n"
      "        antiAffinity:\n"
      "          - topologyKey: zone\n"
      "            mode: preferred\n"
      "            labelSelector: {matchLabels: {app: sandbox}}\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(waitFor(ns, "bvmpool/sandboxes", "Warm", 120));
  EXPECT_EQ(get("bvmpool sandboxes -n " + ns, "{.status.available}/{.status.replicas}"), "3/3");
  const std::multiset<std::string> one_each = {"za", "zb", "zc"};
  EXPECT_EQ(words(get("virtualmachines -n " + ns + " -l banlieue.io/pool=sandboxes",
                      "{.items[*].status.scheduled.failureDomain}")),
            one_each);
  // The backend agrees with the placement.
  EXPECT_EQ(words(get("filemachines -n " + ns, "{.items[*].status.failureDomain}")), one_each);
}

// userData from a Secret, with placeholders rendered by the controller, lands in the backend:
// only once the Secret opted in, and never through the infrastructure object (ADR 0026). The
// deployed roles' own RBAC carries it: the controller writes the rendered Secret, the provider
// pod reads it.
TEST_F(FlowsTest, UserDataIsRenderedIntoTheBackend) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  // The controller reads userData only in namespaces bootstrap was told about: re-running
  // bootstrap with this one is how a user grants it.
  auto granted = bootstrapCommand({"--userdata-namespace", ns});
  ASSERT_EQ(granted.exit_code, 0) << granted.output;
  auto files = fileProvider(ns, "files", "tier: files");
  auto secret = cluster_.apply(
      "apiVersion: v1\nkind: Secret\n"
      "metadata: {name: web-user-data, namespace: " +
      ns +
      "}\n"
      "stringData:\n"
      "  user-data: |\n"
      "    #cloud-config\n"
      "    hostname: ${VM_NAME}\n"
      "    fqdn: ${FQDN}\n"
      "    write_files: [{path: /etc/motd, content: \"${UNKNOWN}\"}]\n");
  ASSERT_EQ(secret.exit_code, 0) << secret.output;
  applyVm(ns, "web-01", "tier: files",
          "  userData:\n    secretRef: {name: web-user-data, key: user-data}\n");
  // Not labelled for use as userData: refused, and nothing is made of it.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return condition(ns, "web-01", "Ready") == "False/UserDataNotAllowed"; }, kConverge))
      << condition(ns, "web-01", "Ready");
  EXPECT_THAT(get("bvm web-01 -n " + ns, "{.status.conditions[?(@.type==\"Ready\")].message}"),
              HasSubstr("banlieue.io/user-data=true"));
  EXPECT_EQ(cluster_.kubectl("get secret web-01-rendered-userdata -n " + ns).exit_code, 1);
  ASSERT_EQ(
      cluster_.kubectl("label secret web-user-data banlieue.io/user-data=true -n " + ns).exit_code,
      0);
  ASSERT_TRUE(waitFor(ns, "bvm/web-01", "Ready"));
  // The infrastructure object names the rendered Secret and holds no text.
  const std::string machine = "filemachine web-01 -n " + ns;
  EXPECT_EQ(get(machine, "{.spec.userData}"), "");
  EXPECT_EQ(get(machine, "{.metadata.annotations.banlieue\\.io/user-data-secret}"),
            "web-01-rendered-userdata");
  auto vm = backendFile(files, "web-01");
  ASSERT_TRUE(vm.has_value());
  std::string user_data = json::stringOr(&*vm, "userData");
  EXPECT_THAT(user_data, HasSubstr("#cloud-config\n"));
  EXPECT_THAT(user_data, HasSubstr("hostname: web-01\n"));
  EXPECT_THAT(user_data, HasSubstr("fqdn: web-01\n"));
  EXPECT_THAT(user_data, Not(HasSubstr("${VM_NAME}")));
  // Placeholders outside the fixed set are left as written.
  EXPECT_THAT(user_data, HasSubstr("${UNKNOWN}"));
}

// Bad input: a clear condition reason on the VM, nothing crashes, nothing is created.
TEST_F(FlowsTest, BadInputGivesAClearConditionAndNoCrash) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  auto files = fileProvider(ns, "files", "tier: files");
  ASSERT_TRUE(waitFor(ns, "provider/files", "Ready"));

  applyVm(ns, "no-class", "tier: files", "", "no-such-class-" + suffix_);
  applyVm(ns, "no-provider", "tier: nowhere");
  // Two userData sources: the schema refuses it at apply, before any controller sees it.
  auto two_sources = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: two-sources, "
      "namespace: " +
      ns + "}\nspec:\n  classRef: {name: " + vmClass() + "}\n  imageRef: {name: " + vmImage() +
      "}\n  userData:\n    secretRef: {name: some-secret}\n    configMapRef: {name: "
      "some-config-map}\n");
  EXPECT_NE(two_sources.exit_code, 0) << two_sources.output;
  EXPECT_THAT(two_sources.output, HasSubstr("spec.userData")) << two_sources.output;
  applyVm(ns, "missing-secret", "tier: files",
          "  userData:\n    secretRef: {name: not-there, key: user-data}\n");

  auto settled = [&](const std::string& vm, const std::string& want) {
    return LocalCluster::eventually([&] { return condition(ns, vm, "Ready") == want; }, kConverge);
  };
  EXPECT_TRUE(settled("no-class", "False/ClassNotFound")) << condition(ns, "no-class", "Ready");
  EXPECT_THAT(get("bvm no-class -n " + ns, "{.status.conditions[?(@.type==\"Ready\")].message}"),
              HasSubstr("VMClass no-such-class-" + suffix_ + " not found"));
  EXPECT_TRUE(settled("no-provider", "False/Scheduling"));
  EXPECT_EQ(condition(ns, "no-provider", "Scheduled"), "False/NoProviderMatched");
  EXPECT_THAT(get("bvm no-provider -n " + ns, "{.status.conditions[?(@.type==\"Ready\")].message}"),
              HasSubstr("no Provider in namespace " + ns +
                        " matches providerSelector tier=nowhere: the namespace holds 1 Provider"));
  EXPECT_TRUE(settled("missing-secret", "False/InfraBuildFailed"));
  EXPECT_THAT(
      get("bvm missing-secret -n " + ns, "{.status.conditions[?(@.type==\"Ready\")].message}"),
      HasSubstr("not-there"));
  // A Warning event tells the user too.
  EXPECT_THAT(cluster_
                  .kubectl("get events -n " + ns +
                           " --field-selector involvedObject.name=no-provider,type=Warning "
                           "-o jsonpath='{.items[*].reason}'")
                  .output,
              HasSubstr("NoProviderMatched"));

  // Nothing reached the backend, nothing crashed.
  EXPECT_EQ(get("filemachines -n " + ns, "{.items[*].metadata.name}"), "");
  EXPECT_EQ(backendEntries(files), std::set<std::string>{});
  expectNoCrash(ns);

  // Fixing the input is enough: the VM converges without a restart of anything.
  applyVm(ns, "no-class", "tier: files");
  EXPECT_TRUE(waitFor(ns, "bvm/no-class", "Ready"));
  expectNoCrash(ns);
}

// The provider image recipe for plugin authors (examples/file-provider/Containerfile):
// banlieue's image plus the plugin's directory. Its own CTest test (label node), with its own
// bootstrap.
class ProviderImageTest : public FlowsTest {};

// A ProviderClass naming the provider image and the plugin by its path in the image's plugin
// directory runs a VM to Ready, and the Provider's pod runs exactly that image.
TEST_F(ProviderImageTest, AClassNamingTheProviderImageRunsAVmToReady) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  const std::string cls = "e2e-image-" + suffix_;
  applyImageClass(cls, "file", kProviderFileImage);
  ASSERT_TRUE(waitFor(ns, "providerclass/" + cls, "Ready"))
      << get("providerclass " + cls, "{.status}");
  EXPECT_EQ(get("providerclass " + cls, "{.status.machineKind.kind}"), "FileMachine");

  auto files = fileProvider(ns, "vendor", "vendor: file", "?createSeconds=0", cls);
  applyVm(ns, "app-01", "vendor: file", "", "", cls);
  ASSERT_TRUE(waitFor(ns, "bvm/app-01", "Ready"));
  EXPECT_EQ(get("bvm app-01 -n " + ns,
                "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}"),
            "vendor/FileMachine");
  auto vm = backendFile(files, "app-01");
  ASSERT_TRUE(vm.has_value());
  EXPECT_EQ(json::stringOr(&*vm, "state"), "running");

  // The Provider's one pod: its spec and the runtime's status both name the provider image.
  const std::string pods = "pods -n " + ns + " -l banlieue.io/provider=vendor";
  EXPECT_EQ(words(get(pods, "{..image}")),
            (std::multiset<std::string>{kProviderFileImage, kProviderFileImage}));
  expectNoCrash(ns);
}

// A third party's backend added to a running cluster (issue #21): the C example plugin, built
// against the SDK installed alone into a provider image FROM banlieue's
// (examples/c-provider/Containerfile; deploy/local/images builds it as a third party would).
// Neither banlieue's image nor the operator's holds it, and bootstrap is not run again.
class ThirdPartyBackendTest : public FlowsTest {};

const std::string kProviderCFileImage =
    std::string("localhost/banlieue-provider-cfile:") + kVersion;

// Only `kubectl apply`: the plugin's CRD and its two ClusterRoles (`banlieue plugin
// manifests`), then a ProviderClass naming its image. The class's provider pod publishes what
// it loaded, a VM runs on it to Ready and is deleted with its backend file.
TEST_F(ThirdPartyBackendTest, AddedWithKubectlApplyAloneItRunsAVmAndDeletesIt) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  const std::string cls = "e2e-cfile-" + suffix_;

  // 1. What the plugin's author ships beside the image, generated from its directory.
  const std::filesystem::path manifests =
      std::filesystem::temp_directory_path() / ("banlieue-cfile-" + suffix_ + ".yaml");
  auto printed =
      runCommand(shellQuote(BANLIEUE_BINARY) + " plugin manifests " +
                     shellQuote(std::string(BANLIEUE_SOURCE_DIR) + "/examples/c-provider") + " > " +
                     shellQuote(manifests.string()),
                 std::chrono::seconds(30));
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  auto installed = cluster_.kubectl("apply -f " + shellQuote(manifests.string()));
  ASSERT_EQ(installed.exit_code, 0) << installed.output;
  for (const auto* o :
       {"crd/cfilemachines.infrastructure.cfile.example.com", "clusterrole/banlieue-provider-cfile",
        "clusterrole/banlieue-infrastructure-cfile"}) {
    cluster_objects_.emplace_back(o);
  }

  // 2. The class: image and plugin path. Usable at once; the kinds come from its pods.
  applyImageClass(cls, "cfile", kProviderCFileImage);
  ASSERT_TRUE(waitFor(ns, "providerclass/" + cls, "Ready"))
      << get("providerclass " + cls, "{.status}");
  EXPECT_EQ(
      get("providerclass " + cls, "{.status.conditions[?(@.type==\"PluginPublished\")].reason}"),
      "AwaitingProviderPod");

  // 3. A Provider of it: its pod loads the plugin and publishes it on the class.
  auto files = fileProvider(ns, "vendor", "vendor: cfile", "?createSeconds=0", cls);
  ASSERT_TRUE(waitFor(ns, "providerclass/" + cls, "PluginPublished"))
      << get("providerclass " + cls, "{.status}") << namespaceState(ns);
  EXPECT_EQ(get("providerclass " + cls,
                "{.status.plugin.name}/{.status.machineKind.kind}/{.status.machineKinds[*].kind}"),
            "cfile/CFileMachine/CFileMachine");
  EXPECT_THAT(get("providerclass " + cls, "{.status.plugin.abi}"),
              ::testing::MatchesRegex("1\\.[0-9]+"));
  EXPECT_THAT(get("providerclass " + cls, "{.status.plugin.sha256}"),
              ::testing::MatchesRegex("[0-9a-f]{64}"));

  // 4. A VM on it, from the same manifest as on every other backend.
  applyVm(ns, "app-01", "vendor: cfile", "", "", cls);
  ASSERT_TRUE(waitFor(ns, "bvm/app-01", "Ready")) << namespaceState(ns);
  EXPECT_EQ(get("bvm app-01 -n " + ns,
                "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}"),
            "vendor/CFileMachine");
  auto vm = backendFile(files, "app-01");
  ASSERT_TRUE(vm.has_value()) << namespaceState(ns);
  EXPECT_EQ(json::stringOr(&*vm, "state"), "running");
  EXPECT_EQ(words(get("pods -n " + ns + " -l banlieue.io/provider=vendor", "{..image}")),
            (std::multiset<std::string>{kProviderCFileImage, kProviderCFileImage}));

  // 5. Deleted cleanly: the VM, its CFileMachine and the backend's file.
  auto deleted =
      cluster_.kubectl("delete bvm app-01 --timeout=90s -n " + ns, std::chrono::seconds(120));
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_EQ(get("cfilemachines -n " + ns, "{.items[*].metadata.name}"), "");
  auto left = backendEntries(files);
  ASSERT_TRUE(left.has_value());
  EXPECT_THAT(*left, Not(Contains(ns + "_app-01.json")));
  expectNoCrash(ns);
  std::filesystem::remove(manifests);
}

// The out-of-tree QEMU backend (examples/qemu-provider: QMP, no libvirt), built against the SDK
// installed alone into its own provider image FROM banlieue's with Debian's QEMU in it
// (examples/qemu-provider/Containerfile; deploy/local/images builds it). Its machines are
// qemu-system-x86_64 processes in the provider's pod (TCG: the pod has no /dev/kvm).
const std::string kProviderQemuImage = std::string("localhost/banlieue-provider-qemu:") + kVersion;

// A QEMU Provider's backend as the test reads it in the pod: the state directory's machine
// directory of one QemuMachine, and the QEMU process its qemu.pid names.
struct QemuBackendProbe {
  std::string pid;      // empty when no qemu.pid
  std::string cmdline;  // the process's command line (NULs as spaces); empty when not running
  bool dir = false;     // machines/<uid>/ exists
};

// Added with kubectl apply alone like any third party's backend, the QEMU backend runs a VM on
// real QEMU, powers it off and on (the process goes and comes back, the disks stay), applies a
// resize by restarting it, and a VM swaps from libvirt to it and back with its manifest
// unchanged but for the selector; leaving QEMU deletes the machine's process and disks.
TEST_F(ThirdPartyBackendTest, TheQemuBackendRunsAVmOnRealQemuAndSwapsWithLibvirt) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  const std::string cls = "e2e-qemu-" + suffix_;
  constexpr const char* kState = "/tmp/qemu";

  // 1. The plugin's CRD and roles, then a class naming its image.
  const std::filesystem::path manifests =
      std::filesystem::temp_directory_path() / ("banlieue-qemu-" + suffix_ + ".yaml");
  auto printed =
      runCommand(shellQuote(BANLIEUE_BINARY) + " plugin manifests " +
                     shellQuote(std::string(BANLIEUE_SOURCE_DIR) + "/examples/qemu-provider") +
                     " > " + shellQuote(manifests.string()),
                 std::chrono::seconds(30));
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  auto installed = cluster_.kubectl("apply -f " + shellQuote(manifests.string()));
  std::filesystem::remove(manifests);
  ASSERT_EQ(installed.exit_code, 0) << installed.output;
  for (const auto* o :
       {"crd/qemumachines.infrastructure.qemu.example.com", "clusterrole/banlieue-provider-qemu",
        "clusterrole/banlieue-infrastructure-qemu"}) {
    cluster_objects_.emplace_back(o);
  }
  applyImageClass(cls, "qemu", kProviderQemuImage);

  // 2. Two Providers of one site: libvirt (the image's simulated host) and QEMU, whose state
  // directory is in its pod. One image both can boot: libvirt's volume, QEMU's base image.
  libvirtProvider(ns, "host1", "site: lab, backend: libvirt");
  applyProvider(ns, "vmm", cls, "site: lab, backend: qemu",
                std::string("qemu://") + kState + "?powerdownSeconds=2",
                "    storageClasses: [{name: std}]\n    networkClasses: [{name: lan}]\n");
  ASSERT_TRUE(waitFor(ns, "provider/vmm", "Ready", 120)) << namespaceState(ns);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("providerclass " + cls,
                   "{.status.plugin.name}/{.status.machineKinds[*].kind}") == "qemu/QemuMachine";
      },
      kConverge))
      << get("providerclass " + cls, "{.status}");
  const std::string deploy = "deploy/banlieue-provider-" + cls + "-vmm";
  auto in_pod = [&](const std::string& command) {
    return cluster_.kubectl("exec -n " + ns + " " + deploy + " -- " + command);
  };
  // What the example's README tells its users: base images go into <state>/images.
  auto base = in_pod(std::string("mkdir -p ") + kState + "/images");
  ASSERT_EQ(base.exit_code, 0) << base.output;
  base = in_pod(std::string("qemu-img create -q -f qcow2 ") + kState + "/images/base.img " +
                std::to_string(kLibvirtVolumeGiB) + "G");
  ASSERT_EQ(base.exit_code, 0) << base.output;
  const std::string image = "e2e-qemu-" + suffix_ + "-both";
  cluster_objects_.push_back("vmimage/" + image);
  auto created = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VMImage\nmetadata: {name: " + image +
      "}\nspec:\n  osFamily: linux\n  sources:\n"
      "    - {providerClass: libvirt, kind: BackingFile, ref: " +
      kLibvirtVolume + "}\n    - {providerClass: " + cls + ", kind: BackingFile, ref: base.img}\n");
  ASSERT_EQ(created.exit_code, 0) << created.output;

  // 3. The VM starts on libvirt.
  applyVm(ns, "vm-01", "site: lab, backend: libvirt", "", "", image);
  ASSERT_TRUE(waitFor(ns, "bvm/vm-01", "Ready")) << namespaceState(ns);
  EXPECT_EQ(get("bvm vm-01 -n " + ns, "{.status.infrastructureRef.kind}"), "LibvirtMachine");
  const std::string spec_before = specWithoutPlacement(ns, "vm-01");

  auto probe = [&](const std::string& uid) {
    QemuBackendProbe p;
    const std::string dir = std::string(kState) + "/machines/" + uid;
    p.dir = in_pod("test -d " + dir).exit_code == 0;
    auto pid = in_pod("cat " + dir + "/qemu.pid");
    if (pid.exit_code == 0) {
      p.pid = pid.output.substr(0, pid.output.find_first_of(" \n"));
      auto cmd = in_pod("cat /proc/" + p.pid + "/cmdline");
      if (cmd.exit_code == 0) {
        p.cmdline = cmd.output;
        std::replace(p.cmdline.begin(), p.cmdline.end(), '\0', ' ');
      }
    }
    return p;
  };
  auto select = [&](const std::string& backend) {
    auto r = cluster_.kubectl("patch bvm vm-01 -n " + ns +
                              " --type=merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{"
                              "\"matchLabels\":{\"site\":\"lab\",\"backend\":\"" +
                              backend + "\"}}}}}'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  };

  // 4. Swapped to QEMU: a QemuMachine, a QEMU process in the pod, no LibvirtMachine.
  select("qemu");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        return get("bvm vm-01 -n " + ns,
                   "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}/"
                   "{.status.conditions[?(@.type==\"Ready\")].status}") == "vmm/QemuMachine/True" &&
               !exists("libvirtmachine vm-01 -n " + ns);
      },
      std::chrono::seconds(150)))
      << namespaceState(ns) << cluster_.kubectl("get qemumachines -o yaml -n " + ns).output;
  EXPECT_EQ(specWithoutPlacement(ns, "vm-01"), spec_before);
  const std::string uid = get("qemumachine vm-01 -n " + ns, "{.metadata.uid}");
  auto running = probe(uid);
  EXPECT_TRUE(running.dir);
  EXPECT_THAT(running.cmdline, HasSubstr("qemu-system-x86_64"));
  EXPECT_THAT(running.cmdline, HasSubstr("-m 256"));
  EXPECT_EQ(get("bvm vm-01 -n " + ns, "{.status.observedPowerState}"), "PoweredOn");

  // 5. Off and on with the CLI: the process goes, the disks stay, a new process comes.
  auto stopped = cluster_.kubectlBanlieue("vm stop vm-01 -n " + ns + " --timeout 90",
                                          std::chrono::seconds(120));
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output << namespaceState(ns);
  auto off = probe(uid);
  EXPECT_TRUE(off.dir) << "powered off keeps the machine's disks";
  EXPECT_EQ(off.cmdline, "") << "no QEMU runs for a powered-off machine";
  EXPECT_EQ(in_pod(std::string("test -f ") + kState + "/machines/" + uid + "/root.qcow2").exit_code,
            0);
  auto started = cluster_.kubectlBanlieue("vm start vm-01 -n " + ns + " --timeout 90",
                                          std::chrono::seconds(120));
  ASSERT_EQ(started.exit_code, 0) << started.output << namespaceState(ns);
  auto on = probe(uid);
  EXPECT_THAT(on.cmdline, HasSubstr("qemu-system-x86_64"));
  EXPECT_NE(on.pid, running.pid);

  // 6. A resize is applied by restarting the machine: QEMU runs with the new shape.
  auto resized = cluster_.kubectl("patch bvm vm-01 -n " + ns +
                                  " --type=merge -p '{\"spec\":{\"hardwareOverride\":{\"cpus\":2,"
                                  "\"memoryMiB\":320}}}'");
  ASSERT_EQ(resized.exit_code, 0) << resized.output;
  QemuBackendProbe bigger;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        bigger = probe(uid);
        return bigger.cmdline.find("-m 320") != std::string::npos &&
               get("bvm vm-01 -n " + ns, "{.status.conditions[?(@.type==\"Ready\")].status}") ==
                   "True";
      },
      std::chrono::seconds(90)))
      << bigger.cmdline << namespaceState(ns);
  EXPECT_THAT(bigger.cmdline, HasSubstr("-smp 2"));

  // 7. Back to libvirt: QEMU's process and machine directory go with the QemuMachine.
  select("libvirt");
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("bvm vm-01 -n " + ns,
                   "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}/"
                   "{.status.conditions[?(@.type==\"Ready\")].status}") ==
                   "host1/LibvirtMachine/True" &&
               !exists("qemumachine vm-01 -n " + ns);
      },
      std::chrono::seconds(150)))
      << namespaceState(ns);
  auto gone = probe(uid);
  EXPECT_FALSE(gone.dir) << "the machine's directory (its disks) is left in the pod";
  EXPECT_EQ(gone.pid, "");
  // Gone, not a zombie: QEMU daemonizes, so banlieue, the pod's PID 1, is its parent and reaps
  // it (host/common/container_init.h).
  if (!bigger.pid.empty()) {
    EXPECT_NE(in_pod("test -d /proc/" + bigger.pid).exit_code, 0)
        << "QEMU (pid " << bigger.pid << ") is left after its machine was deleted: "
        << in_pod("cat /proc/" + bigger.pid + "/status").output;
  }
  EXPECT_EQ(in_pod(std::string("ls -A ") + kState + "/machines").output, "");
  expectNoCrash(ns);
}

// Backends a provider pod reaches over the cluster's network, as on a real site.
class PodBackendsTest : public FlowsTest {};

// The Proxmox plugin in its pod reaches the PVE API (the project's fake, the one backend with
// no real part; it listens on the address pods reach) over TLS verified against the Provider's
// CA with the token from its Secret: the Provider is Ready with the PVE nodes as failure
// domains, a VM placed on node pve1 is a clone of that node's template, and deleting the VM
// removes the guest.
TEST_F(PodBackendsTest, AProxmoxProviderPodReachesItsApiAndRunsAVm) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  ASSERT_TRUE(classServes("proxmox", "ProxmoxMachine"));
  // Where the Provider's pod reaches this machine, with a certificate for that address.
  const std::string address = cluster_.podReachableAddress();
  ASSERT_FALSE(address.empty());
  proxmox::testing::FakePve pve(address);
  const int guests_before = pve.guestCount();

  using proxmox::testing::jsonEscape;
  auto applied = cluster_.apply(
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"pve-token","namespace":")" + ns +
      R"("},"stringData":{"username":")" + proxmox::testing::FakePve::kUser +
      R"(","tokenValue":")" + proxmox::testing::FakePve::kSecret + R"("}})");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  applied = cluster_.apply(
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
      R"("metadata":{"name":"pve","namespace":")" +
      ns +
      R"(","labels":{"backend":"proxmox"}},)"
      R"("spec":{"providerClassRef":{"name":"proxmox"},)"
      R"("connection":{"endpoint":")" +
      pve.url() + R"(","credentialsRef":{"name":"pve-token"},"caBundle":{"inline":")" +
      jsonEscape(pve.caPem()) +
      R"("}},)"
      R"("capabilities":{"storageClasses":[{"name":"std","target":{"storage":"local-lvm"}}],)"
      R"("networkClasses":[{"name":"lan","target":{"bridge":"vmbr1"}}]}}})");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(waitFor(ns, "provider/pve", "Ready")) << namespaceState(ns);
  EXPECT_EQ(words(get("provider pve -n " + ns, "{.status.failureDomains[*].name}")),
            (std::multiset<std::string>{"pve1", "pve2"}));

  // Template 9000 lives on node pve1: the VM is placed there.
  const std::string image = "e2e-pve-" + suffix_;
  cluster_objects_.push_back("vmimage/" + image);
  auto created =
      cluster_.apply("apiVersion: banlieue.io/v1alpha1\nkind: VMImage\nmetadata: {name: " + image +
                     "}\nspec:\n  osFamily: linux\n"
                     "  sources: [{providerClass: proxmox, kind: Template, ref: \"9000\"}]\n");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  applyVm(ns, "pve-01", "backend: proxmox",
          "    failureDomainSelector:\n      matchLabels: {node: pve1}\n", "", image);
  ASSERT_TRUE(waitFor(ns, "bvm/pve-01", "Ready", 180)) << namespaceState(ns);
  EXPECT_EQ(get("bvm pve-01 -n " + ns,
                "{.status.scheduled.providerName}/{.status.infrastructureRef.kind}/"
                "{.status.scheduled.failureDomain}"),
            "pve/ProxmoxMachine/pve1");
  EXPECT_EQ(pve.guestCount(), guests_before + 1);

  auto deleted =
      cluster_.kubectl("delete bvm pve-01 --timeout=120s -n " + ns, std::chrono::seconds(150));
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_EQ(pve.guestCount(), guests_before);
  expectNoCrash(ns);
  // Before the fake goes: the Provider, while its pod can still reach it.
  removeWorkloads();
}

// The day-2 verbs the way a user runs them (issue #20): `kubectl banlieue vm start|stop|restart|
// snapshot|restore|console` and kubectl get/wait/delete, on each backend in its provider pod on
// the node, each verb's effect read in the backend's own state: libvirt on a real libvirtd (the
// test's own, tests/support/private_libvirtd.h, listening with TLS where pods reach this
// machine, its guest a boot sector under TCG, tests/e2e/echo_guest.h), vSphere on vcsim and
// Proxmox VE on the fake PVE API, both on the same address. And claims: a warm pool member bound
// to a claim and released with it. Its own CTest test (label day2), with its own bootstrap.
class DayTwoVerbsTest : public FlowsTest {
 protected:
  // `kubectl banlieue vm <verb> <vm> <args>`; true when it said the verb was done.
  bool vmVerb(const std::string& ns, const std::string& verb, const std::string& vm,
              const std::string& args = "") {
    auto r = cluster_.kubectlBanlieue(
        "vm " + verb + " " + vm + " -n " + ns + " " + args + " --timeout 120",
        std::chrono::seconds(150));
    const bool done = r.exit_code == 0 && r.output.find(verb + " done") != std::string::npos;
    EXPECT_TRUE(done) << "vm " << verb << " " << vm << " exited " << r.exit_code << ": "
                      << r.output;
    return done;
  }

  // stop, start and restart through the verbs: the VM's status and the backend's own power
  // state (`power()`, worded `off` and `on` as the backend words them) follow each.
  void powerVerbs(
      const std::string& ns, const std::string& vm, const std::function<std::string()>& power,
      const std::string& off, const std::string& on, const std::function<void()>& started = [] {}) {
    ASSERT_TRUE(vmVerb(ns, "stop", vm));
    EXPECT_EQ(get("bvm " + vm + " -n " + ns, "{.status.observedPowerState}"), "PoweredOff");
    EXPECT_TRUE(LocalCluster::eventually([&] { return power() == off; })) << power();
    ASSERT_TRUE(vmVerb(ns, "start", vm));
    EXPECT_EQ(get("bvm " + vm + " -n " + ns, "{.status.observedPowerState}"), "PoweredOn");
    EXPECT_TRUE(LocalCluster::eventually([&] { return power() == on; })) << power();
    started();
    ASSERT_TRUE(vmVerb(ns, "restart", vm));
    const std::string requested = get("bvm " + vm + " -n " + ns, "{.spec.restartRequestedAt}");
    EXPECT_FALSE(requested.empty());
    EXPECT_EQ(get("bvm " + vm + " -n " + ns,
                  "{.status.lastRestart.requestedAt}/{.status.lastRestart.outcome}"),
              requested + "/Restarted");
    // The answer comes with the shutdown: the start follows.
    EXPECT_TRUE(LocalCluster::eventually(
        [&] {
          return power() == on &&
                 get("bvm " + vm + " -n " + ns,
                     "{.status.observedPowerState}/"
                     "{.status.conditions[?(@.type==\"Ready\")].status}") == "PoweredOn/True";
        },
        kConverge))
        << power();
  }

  // `vm snapshot` named `snapshot`: Ready, and the backend's id of it (status.snapshotRef).
  std::string takeSnapshot(const std::string& ns, const std::string& vm,
                           const std::string& snapshot) {
    if (!vmVerb(ns, "snapshot", vm, "--snapshot-name " + snapshot)) return "";
    const std::string what = "virtualmachinesnapshot " + snapshot + " -n " + ns;
    EXPECT_EQ(
        get(what, "{.status.conditions[?(@.type==\"Ready\")].status}/{.status.machineRef.kind}"),
        "True/" + get("bvm " + vm + " -n " + ns, "{.status.infrastructureRef.kind}"));
    std::string ref = get(what, "{.status.snapshotRef}");
    EXPECT_FALSE(ref.empty());
    return ref;
  }

  // `vm restore --snapshot`: the VM's one VirtualMachineRestore is Complete, with its time.
  void restore(const std::string& ns, const std::string& vm, const std::string& snapshot) {
    ASSERT_TRUE(vmVerb(ns, "restore", vm, "--snapshot " + snapshot));
    auto answered = get("virtualmachinerestores -n " + ns,
                        "{range .items[?(@.spec.virtualMachineName==\"" + vm +
                            "\")]}{.spec.snapshotName}/{.status.conditions[?(@.type==\"Complete\")]"
                            ".status}/{.status.restoredAt}{end}");
    EXPECT_THAT(answered, ::testing::StartsWith(snapshot + "/True/20")) << answered;
  }

  // kubectl delete of a VirtualMachineSnapshot: gone once the backend removed it.
  void deleteSnapshot(const std::string& ns, const std::string& snapshot) {
    auto deleted =
        cluster_.kubectl("delete virtualmachinesnapshot " + snapshot + " --timeout=90s -n " + ns,
                         std::chrono::seconds(120));
    EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  }

  // kubectl delete of a VM: gone once the backend removed its machine.
  void deleteVm(const std::string& ns, const std::string& vm) {
    auto deleted = cluster_.kubectl("delete bvm " + vm + " --timeout=120s -n " + ns,
                                    std::chrono::seconds(150));
    EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  }

  // `kubectl banlieue vm console <vm> <args>` typing `input`, for `seconds`: what it printed.
  CommandResult console(const std::string& ns, const std::string& vm, const std::string& token,
                        const std::string& args, const std::string& input = "", int seconds = 3) {
    return cluster_.kubectlBanlieue("vm console " + vm + " -n " + ns + " --token " + token +
                                        " --timeout " + std::to_string(seconds) + " " + args +
                                        " <<'BANLIEUE_EOF'\n" + input + "BANLIEUE_EOF",
                                    std::chrono::seconds(seconds + 60));
  }
};

// Directories QEMU (user libvirt-qemu) and the kubelet's hostPath volumes traverse.
constexpr auto kTraversable = std::filesystem::perms::owner_all |
                              std::filesystem::perms::group_exec |
                              std::filesystem::perms::others_exec;

// A directory of the test's own, traversable by QEMU, removed with everything in it.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    char name[] = "/tmp/banlieue-e2e-XXXXXX";
    if (::mkdtemp(name) != nullptr) {
      path = name;
      std::filesystem::permissions(path, kTraversable);
    }
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

// The echo guest's disk as `volume` in `libvirtd`'s pool, readable by QEMU, and the pool
// refreshed (listing it) so that libvirt sees the file written behind its back.
::testing::AssertionResult putEchoGuest(const PrivateLibvirtd& libvirtd,
                                        const std::string& volume) {
  if (!writeEchoGuestDisk(libvirtd.poolPath() / volume, 1 << 20)) {
    return ::testing::AssertionFailure() << "cannot write " << volume;
  }
  std::filesystem::permissions(
      libvirtd.poolPath() / volume,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
          std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  if (libvirtd.volumes() != std::set<std::string>{volume}) {
    return ::testing::AssertionFailure() << volume << " is not the pool's one volume\n"
                                         << libvirtd.log();
  }
  return ::testing::AssertionSuccess();
}

// Runs `done` when it goes out of scope: what must happen before the backends declared
// earlier go, however the test ends.
struct AtExit {
  std::function<void()> done;
  ~AtExit() { done(); }
};

// The List item of the Secret a libvirt Provider names as its credentials: `libvirtd`'s client
// certificate and key, and its CA.
std::string libvirtTlsSecret(const std::string& ns, const std::string& name,
                             const PrivateLibvirtd& libvirtd) {
  using proxmox::testing::jsonEscape;
  return R"({"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/tls",)"
         R"("metadata":{"name":")" +
         name + R"(","namespace":")" + ns + R"("},"stringData":{"tls.crt":")" +
         jsonEscape(libvirtd.clientCertPem()) + R"(","tls.key":")" +
         jsonEscape(libvirtd.clientKeyPem()) + R"(","ca.crt":")" + jsonEscape(libvirtd.caPem()) +
         R"("}})";
}

// The List item of the Secret a vSphere Provider names for vcsim: its login.
std::string vcsimCredentialsSecret(const std::string& ns, const std::string& name) {
  return R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":")" + name +
         R"(","namespace":")" + ns + R"("},"stringData":{"username":")" +
         vsphere::testing::Vcsim::kUser + R"(","password":")" + vsphere::testing::Vcsim::kPassword +
         R"("}})";
}

// One VM on each backend, created from one manifest but for its selector, then every verb in
// turn, each checked in the VM's status and in the backend's own state; deleting the VM leaves
// nothing on its backend.
TEST_F(DayTwoVerbsTest, EveryVerbReachesLibvirtVSphereAndProxmox) {
  // Where the time goes, for CI's budget.
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    const auto now = std::chrono::steady_clock::now();
    std::cerr << "day2 wall time, " << what << ": "
              << std::chrono::duration_cast<std::chrono::milliseconds>(now - t0).count() << " ms\n";
    t0 = now;
  };
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  ASSERT_TRUE(classServes("vsphere", "VSphereMachine"));
  ASSERT_TRUE(classServes("proxmox", "ProxmoxMachine"));
  const std::string address = cluster_.podReachableAddress();
  ASSERT_FALSE(address.empty());

  // --- the backends, where the provider pods reach this machine --------------------------
  // A real libvirtd (root only, as the local cluster is): a dir pool holding the guest's disk,
  // an isolated network (a bridge without addresses), QEMU under TCG.
  ASSERT_EQ(PrivateLibvirtd::unavailableReason(), "");
  ScratchDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  PrivateLibvirtd libvirtd;
  const std::string pool = "day2-" + suffix_;
  std::string error;
  ASSERT_TRUE(libvirtd.start(scratch.path, pool, &error, {.tls_address = address})) << error;
  std::filesystem::permissions(libvirtd.poolPath(), kTraversable);
  auto virsh = [&](const std::string& args) {
    auto r = runCommand("virsh -q -c " + shellQuote(libvirtd.uri()) + " " + args);
    std::string out = r.output;
    while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
    return r.exit_code == 0 ? out : "<virsh " + args + ": " + out + ">";
  };
  const std::string network = "day2-" + suffix_;
  const std::filesystem::path network_xml = scratch.path / "network.xml";
  std::ofstream(network_xml) << "<network><name>" << network << "</name><bridge name='bnld2"
                             << suffix_.substr(0, 9) << "'/></network>\n";
  ASSERT_EQ(virsh("net-create " + shellQuote(network_xml.string())).rfind("<virsh", 0),
            std::string::npos);
  const std::string base_volume = "echo-guest.raw";
  ASSERT_TRUE(putEchoGuest(libvirtd, base_volume));

  vsphere::testing::Vcsim vcsim({}, address);
  vsphere::testing::Backend vcenter(vcsim);
  const std::set<std::string> vcenter_before = vcenter.vmNames();

  proxmox::testing::FakePve pve(address);
  const int guests_before = pve.guestCount();
  // The template has a serial port on a socket, as PVE's console needs (its clones copy it).
  pve.fake("config?vmid=9000&key=serial0&value=socket");

  // Before the backends go: the VMs and the Providers, while the pods can still reach them;
  // then the network's bridge, which lives in the machine's network namespace.
  AtExit before_the_backends{[&] {
    removeWorkloads();
    virsh("net-destroy " + network);
  }};

  // --- what a platform team writes: a Provider per backend, one image for all three -------
  auto applied = cluster_.apply(
      R"({"apiVersion":"v1","kind":"List","items":[)" +
      // libvirt: TLS both ways, the client certificate and the CA in the credentials Secret.
      libvirtTlsSecret(ns, "libvirt-tls", libvirtd) + "," +
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"kvm",)"
      R"("namespace":")" +
      ns +
      R"(","labels":{"backend":"libvirt"},)"
      R"("annotations":{"libvirt.banlieue.io/domain-type":"qemu"}},)"
      R"("spec":{"providerClassRef":{"name":"libvirt"},"connection":{"endpoint":")" +
      libvirtd.tlsUri() +
      R"(","credentialsRef":{"name":"libvirt-tls"}},)"
      R"("capabilities":{"storageClasses":[{"name":"std","target":{"pool":")" +
      pool + R"("}}],"networkClasses":[{"name":"lan","target":{"network":")" + network +
      R"("}}]}}},)" +
      // vSphere: vcsim's login, its CA inline.
      vcsimCredentialsSecret(ns, "vc-creds") + "," +
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"vcenter",)"
      R"("namespace":")" +
      ns +
      R"(","labels":{"backend":"vsphere"}},)"
      R"("spec":{"providerClassRef":{"name":"vsphere"},"connection":)" +
      vcsim.providerConnection("vc-creds") +
      R"(,"capabilities":{"storageClasses":[{"name":"std","target":{"datastore":"LocalDS_0"}}],)"
      R"("networkClasses":[{"name":"lan","target":{"portGroup":"VM Network"}}]}}},)"
      // Proxmox VE: an API token, the CA inline.
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"pve-token","namespace":")" +
      ns + R"("},"stringData":{"username":")" + proxmox::testing::FakePve::kUser +
      R"(","tokenValue":")" + proxmox::testing::FakePve::kSecret +
      R"("}},)"
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"pve",)"
      R"("namespace":")" +
      ns +
      R"(","labels":{"backend":"proxmox"}},)"
      R"("spec":{"providerClassRef":{"name":"proxmox"},)"
      R"("connection":{"endpoint":")" +
      pve.url() + R"(","credentialsRef":{"name":"pve-token"},"caBundle":{"inline":")" +
      jsonEscape(pve.caPem()) +
      R"("}},)"
      R"("capabilities":{"storageClasses":[{"name":"std","target":{"storage":"local-lvm"}}],)"
      R"("networkClasses":[{"name":"lan","target":{"bridge":"vmbr1"}}]}}}]})");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  // BIOS firmware: the guest is a boot sector (and libvirt takes no internal snapshot of a
  // domain whose UEFI variables live in a pflash file).
  const std::string shape = "e2e-day2-" + suffix_;
  cluster_objects_.push_back("vmclass/" + shape);
  applied =
      cluster_.apply("apiVersion: banlieue.io/v1alpha1\nkind: VMClass\nmetadata: {name: " + shape +
                     "}\nspec:\n  firmware: bios\n  hardware:\n    cpus: 1\n"
                     "    memoryMiB: 128\n"
                     "    disks: [{name: root, sizeGiB: 1, storageClass: std}]\n"
                     "  network:\n    interfaces: [{name: eth0, networkClass: lan}]\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const std::string image = "e2e-day2-" + suffix_;
  cluster_objects_.push_back("vmimage/" + image);
  applied =
      cluster_.apply("apiVersion: banlieue.io/v1alpha1\nkind: VMImage\nmetadata: {name: " + image +
                     "}\nspec:\n  osFamily: linux\n  sources:\n"
                     "    - {providerClass: libvirt, kind: BackingFile, ref: " +
                     base_volume +
                     "}\n"
                     "    - {providerClass: vsphere, kind: Template, ref: DC0_C0_RP0_VM0}\n"
                     "    - {providerClass: proxmox, kind: Template, ref: \"9000\"}\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;

  // --- the user's VMs: the same manifest on each backend but for the selector -------------
  applyVm(ns, "lv-01", "backend: libvirt", "", shape, image);
  applyVm(ns, "vc-01", "backend: vsphere", "", shape, image);
  // Template 9000 lives on node pve1.
  applyVm(ns, "pve-01", "backend: proxmox",
          "    failureDomainSelector:\n      matchLabels: {node: pve1}\n", shape, image);
  const std::string token = consoleToken(ns);
  ASSERT_FALSE(token.empty());

  lap("backends, Providers and VMs applied");

  // The three backends share nothing but the namespace (their own Provider, VM, snapshot
  // names and backend): their checks run side by side, so the suite waits for the slowest
  // (libvirt's TCG guest) rather than the sum. gtest records assertions from any thread.

  // An exception in a thread would end the process: it fails the test instead.
  auto guarded = [](std::function<void()> body) {
    return [body = std::move(body)] {
      try {
        body();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "exception: " << e.what();
      }
    };
  };

  // --- libvirt: the domain, its QEMU process, its internal snapshots, its serial port ----
  std::thread libvirt_checks(guarded([&] {
    ASSERT_TRUE(waitFor(ns, "bvm/lv-01", "Ready", 180)) << namespaceState(ns) << libvirtd.log();
    const std::string domain = get("libvirtmachine lv-01 -n " + ns, "{.spec.domainName}");
    ASSERT_EQ(domain, ns + "-lv-01");
    EXPECT_EQ(virsh("domstate " + domain), "running");
    EXPECT_EQ(libvirtd.volumes(), (std::set<std::string>{base_volume, domain + "-root.qcow2"}));

    // What is typed reaches the guest's serial port, and the guest's answer comes back: the
    // upper case and the line count are the guest's. `attempts`: a guest still in its firmware
    // answers nothing yet (SeaBIOS's serial console takes what is typed as keys).
    auto typed = [&](const std::string& word, int attempts = 1) {
      std::string upper = word;
      for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      CommandResult r;
      for (int i = 0; i < attempts; ++i) {
        r = console(ns, "lv-01", token, "", word + "\n");
        std::smatch m;
        if (std::regex_search(r.output, m, std::regex(upper + " #([0-9])"))) {
          EXPECT_EQ(r.exit_code, 0) << r.output;
          return std::stoi(m[1].str());
        }
      }
      ADD_FAILURE() << "no echo of " << word << " from the guest: " << r.output;
      return -1;
    };
    // The guest heeds the ACPI button once it runs (a press during the firmware is lost, as on
    // any guest before its OS listens): a stop or a restart waits until it answers.
    auto answering = [&] { EXPECT_GE(typed("ping", 8), 0) << "the guest never answered"; };

    const std::string first_process = virsh("domid " + domain);
    ASSERT_THAT(first_process, ::testing::MatchesRegex("[0-9]+"));
    answering();
    // Each start is a new QEMU process: the stop ended the first; the restart shut the guest
    // down (it honours the ACPI button) and started a third.
    std::string started_process;
    powerVerbs(
        ns, "lv-01", [&] { return virsh("domstate " + domain); }, "shut off", "running",
        [&] {
          started_process = virsh("domid " + domain);
          EXPECT_THAT(started_process, ::testing::MatchesRegex("[0-9]+"));
          EXPECT_NE(started_process, first_process);
          answering();
        });
    EXPECT_TRUE(LocalCluster::eventually([&] {
      const std::string now = virsh("domid " + domain);
      return now != started_process && std::regex_match(now, std::regex("[0-9]+"));
    })) << virsh("domid " + domain);

    const int lines = typed("hello", 8);
    ASSERT_GE(lines, 0);

    // A snapshot of the running guest keeps its memory (libvirt's internal snapshot, in the
    // root volume); a restore brings the guest's line count back to what it was then.
    const std::string ref = takeSnapshot(ns, "lv-01", "lv-before");
    ASSERT_FALSE(ref.empty());
    EXPECT_EQ(virsh("snapshot-list --name " + domain), ref);
    EXPECT_EQ(typed("again"), (lines + 1) % 10);
    restore(ns, "lv-01", "lv-before");
    EXPECT_TRUE(LocalCluster::eventually([&] { return virsh("domstate " + domain) == "running"; }));
    EXPECT_EQ(typed("after"), (lines + 1) % 10) << "the guest's memory was not reverted";
    deleteSnapshot(ns, "lv-before");
    EXPECT_EQ(virsh("snapshot-list --name " + domain), "");

    deleteVm(ns, "lv-01");
    EXPECT_EQ(virsh("list --all --name"), "");
    EXPECT_EQ(libvirtd.volumes(), std::set<std::string>{base_volume});
  }));

  // --- vSphere: the VM on vcsim, its power state, its snapshot tree, a WebMKS ticket -----
  std::thread vsphere_checks(guarded([&] {
    ASSERT_TRUE(waitFor(ns, "bvm/vc-01", "Ready", 180)) << namespaceState(ns);
    std::set<std::string> added;
    for (const auto& name : vcenter.vmNames()) {
      if (!vcenter_before.count(name)) added.insert(name);
    }
    ASSERT_EQ(added.size(), 1u) << ::testing::PrintToString(added);
    const std::string name = *added.begin();
    auto power = [&] {
      auto vm = vcenter.vm(name, {"runtime.powerState"});
      return vm ? vm->text("runtime.powerState") : std::string("<gone>");
    };
    EXPECT_EQ(power(), "poweredOn");
    // vcsim keeps no boot time: the restart shows in lastRestart and the power state only.
    powerVerbs(ns, "vc-01", power, "poweredOff", "poweredOn");

    // The snapshot tree as vcsim holds it (moref -> name), and the current snapshot.
    auto tree = [&] {
      std::map<std::string, std::string> out;
      auto vm = vcenter.vm(name, {"snapshot"});
      if (!vm) return out;
      std::function<void(const pugi::xml_node&, std::string_view)> walk =
          [&](const pugi::xml_node& parent, std::string_view element) {
            for (const pugi::xml_node& node : vsphere::children(parent, element)) {
              out[vsphere::child(node, "snapshot").text().get()] =
                  vsphere::childText(node, "name").value_or("");
              walk(node, "childSnapshotList");
            }
          };
      walk(vm->node("snapshot"), "rootSnapshotList");
      return out;
    };
    auto current = [&] {
      auto vm = vcenter.vm(name, {"snapshot"});
      return vm ? std::string(vsphere::child(vm->node("snapshot"), "currentSnapshot").text().get())
                : std::string("<gone>");
    };
    // Two snapshots: the restore to the first moves vcsim's current snapshot back to it.
    const std::string first = takeSnapshot(ns, "vc-01", "vc-first");
    const std::string second = takeSnapshot(ns, "vc-01", "vc-second");
    ASSERT_FALSE(first.empty());
    ASSERT_FALSE(second.empty());
    // Named after the VirtualMachineSnapshot (and its uid).
    auto taken = tree();
    EXPECT_EQ(taken.size(), 2u) << ::testing::PrintToString(taken);
    EXPECT_THAT(taken[first], ::testing::StartsWith("vc-first-"));
    EXPECT_THAT(taken[second], ::testing::StartsWith("vc-second-"));
    EXPECT_EQ(current(), second);
    restore(ns, "vc-01", "vc-first");
    EXPECT_EQ(current(), first);
    EXPECT_TRUE(waitFor(ns, "bvm/vc-01", "Ready"));
    EXPECT_TRUE(LocalCluster::eventually([&] { return power() == "poweredOn"; })) << power();
    deleteSnapshot(ns, "vc-second");
    deleteSnapshot(ns, "vc-first");
    EXPECT_EQ(tree(), (std::map<std::string, std::string>{}));

    // vSphere's console is WebMKS: a ticket URL to vcsim's host, printed alone on stdout.
    const std::smatch origin = [&] {
      std::smatch m;
      std::regex_search(vcsim.url(), m, std::regex("https://([^/]+)/"));
      return m;
    }();
    auto url = console(ns, "vc-01", token, "--url");
    EXPECT_EQ(url.exit_code, 0) << url.output;
    EXPECT_TRUE(std::regex_search(
        url.output, std::regex("(^|\n)wss://" + origin[1].str() + "/ticket/[0-9a-f]{32}\n")))
        << url.output;

    deleteVm(ns, "vc-01");
    EXPECT_EQ(vcenter.vmNames(), vcenter_before);
  }));

  // --- Proxmox VE: the guest in the fake's state, its requests, snapshots, serial line ----
  std::thread proxmox_checks(guarded([&] {
    ASSERT_TRUE(waitFor(ns, "bvm/pve-01", "Ready", 180)) << namespaceState(ns);
    const std::string provider_id = get("proxmoxmachine pve-01 -n " + ns, "{.spec.providerID}");
    std::smatch id;
    ASSERT_TRUE(std::regex_match(provider_id, id, std::regex("proxmox://pve1/([0-9]+)")))
        << provider_id;
    const int vmid = std::stoi(id[1].str());
    // The guest as the fake holds it; null once it is gone.
    auto guest = [&]() -> std::optional<rapidjson::Document> {
      rapidjson::Document state = pve.state();
      for (const auto& vm : state["vms"].GetArray()) {
        if (vm["vmid"].GetInt() == vmid) {
          rapidjson::Document one;
          one.CopyFrom(vm, one.GetAllocator());
          return one;
        }
      }
      return std::nullopt;
    };
    auto power = [&] {
      auto vm = guest();
      return vm ? json::stringOr(&*vm, "status") : std::string("<gone>");
    };
    // API requests of this guest's `what` the fake served.
    auto requests = [&](const std::string& what) {
      rapidjson::Document state = pve.state();
      const std::string wanted = "POST /nodes/pve1/qemu/" + std::to_string(vmid) + "/" + what;
      int n = 0;
      for (const auto& r : state["requestLog"].GetArray()) n += r.GetString() == wanted;
      return n;
    };
    EXPECT_EQ(power(), "running");
    const int reboots = requests("status/reboot");
    powerVerbs(ns, "pve-01", power, "stopped", "running");
    EXPECT_EQ(requests("status/reboot"), reboots + 1);

    // The serial console through PVE's termproxy: the guest's login prompt comes back, and
    // the line typed reaches the guest.
    const std::string word = "on-call-" + suffix_;
    auto typed = console(ns, "pve-01", token, "", word + "\n");
    EXPECT_EQ(typed.exit_code, 0) << typed.output;
    EXPECT_THAT(typed.output, HasSubstr("login: " + word)) << typed.output;
    auto vm = guest();
    ASSERT_TRUE(vm.has_value());
    const auto* input = json::find(&*vm, "serialInput");
    ASSERT_TRUE(input != nullptr && input->IsArray()) << json::serialize(*vm);
    EXPECT_EQ(json::serialize(*input), "[\"" + word + "\"]");

    auto snapshots = [&] {
      std::set<std::string> names;
      auto vm = guest();
      const auto* list = vm ? json::find(&*vm, "snapshots") : nullptr;
      if (list != nullptr && list->IsObject()) {
        for (const auto& s : list->GetObject()) names.insert(s.name.GetString());
      }
      return names;
    };
    const std::string ref = takeSnapshot(ns, "pve-01", "pve-before");
    ASSERT_FALSE(ref.empty());
    EXPECT_EQ(snapshots(), std::set<std::string>{ref});
    // The rollback stops the guest (the snapshot holds no RAM); the VM's spec starts it again.
    restore(ns, "pve-01", "pve-before");
    vm = guest();
    ASSERT_TRUE(vm.has_value());
    EXPECT_EQ(json::integer(&*vm, "rollbacks").value_or(0), 1) << json::serialize(*vm);
    EXPECT_TRUE(LocalCluster::eventually(
        [&] {
          return power() == "running" &&
                 get("bvm pve-01 -n " + ns, "{.status.observedPowerState}") == "PoweredOn";
        },
        kConverge))
        << power();
    deleteSnapshot(ns, "pve-before");
    EXPECT_EQ(snapshots(), std::set<std::string>{});

    deleteVm(ns, "pve-01");
    EXPECT_EQ(power(), "<gone>");
    EXPECT_EQ(pve.guestCount(), guests_before);
  }));
  for (auto* checks : {&libvirt_checks, &vsphere_checks, &proxmox_checks}) checks->join();
  lap("libvirt, vSphere and Proxmox side by side");
  expectNoCrash(ns);
}

// A claim through kubectl: a warm pool's member is bound to the claim (labelled, owned by it,
// its backend machine running), the pool makes another, a day-2 verb reaches the claimed
// member's backend, and deleting the claim deletes the member and its backend machine.
TEST_F(DayTwoVerbsTest, AClaimBindsAWarmMemberAndReleasingItDeletesTheMember) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  auto files = fileProvider(ns, "files", "tier: pool");
  auto pool = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachinePool\n"
      "metadata: {name: sandboxes, namespace: " +
      ns + "}\nspec:\n  warmReplicas: 2\n  readiness: InfrastructureReady\n  template:\n" +
      "    labels: {app: sandbox}\n    spec:\n      classRef: {name: " + vmClass() +
      "}\n      imageRef: {name: " + vmImage() +
      "}\n      placement:\n        providerSelector: {matchLabels: {tier: pool}}\n");
  ASSERT_EQ(pool.exit_code, 0) << pool.output;
  ASSERT_TRUE(waitFor(ns, "bvmpool/sandboxes", "Warm", 120)) << namespaceState(ns);
  const std::string members = "virtualmachines -n " + ns + " -l banlieue.io/pool=sandboxes";
  const std::set<std::string> warm = [&] {
    auto names = words(get(members, "{.items[*].metadata.name}"));
    return std::set<std::string>(names.begin(), names.end());
  }();
  ASSERT_EQ(warm.size(), 2u);

  auto claim = cluster_.apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachineClaim\n"
      "metadata: {name: alice, namespace: " +
      ns +
      "}\nspec:\n  poolRef: {name: sandboxes}\n"
      "  subject: {id: alice, issuer: 'https://sso.example.com'}\n");
  ASSERT_EQ(claim.exit_code, 0) << claim.output;
  ASSERT_TRUE(waitFor(ns, "bvmclaim/alice", "Bound", 60)) << namespaceState(ns);
  const std::string member = get("bvmclaim alice -n " + ns, "{.status.memberRef.name}");
  EXPECT_THAT(warm, Contains(member));
  // The member: still the pool's, now the claim's (label and controller owner).
  EXPECT_EQ(get("bvm " + member + " -n " + ns,
                "{.metadata.labels.banlieue\\.io/pool}/{.metadata.labels.banlieue\\.io/claim}/"
                "{.metadata.ownerReferences[*].kind}/{.metadata.ownerReferences[*].name}/"
                "{.metadata.ownerReferences[*].controller}"),
            "sandboxes/alice/VirtualMachineClaim/alice/true");
  EXPECT_TRUE(waitFor(ns, "bvmclaim/alice", "Ready"));
  EXPECT_EQ(get("bvmclaim alice -n " + ns, "{.status.observedPowerState}"), "PoweredOn");
  auto machine = backendFile(files, member);
  ASSERT_TRUE(machine.has_value());
  EXPECT_EQ(json::stringOr(&*machine, "state"), "running");

  // The pool is warm again beside the claimed member.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("bvmpool sandboxes -n " + ns, "{.status.available}/{.status.claimed}") == "2/1";
      },
      kConverge))
      << get("bvmpool sandboxes -n " + ns, "{.status}");

  // The claim's holder uses the verbs on the member like on any VM.
  EXPECT_TRUE(vmVerb(ns, "restart", member));
  machine = backendFile(files, member);
  ASSERT_TRUE(machine.has_value());
  EXPECT_EQ(json::integer(&*machine, "restarts").value_or(-1), 1) << json::serialize(*machine);

  // Released: the garbage collector deletes the member, its finalizer the backend's file. It
  // is never handed back to the pool.
  auto released =
      cluster_.kubectl("delete bvmclaim alice --timeout=60s -n " + ns, std::chrono::seconds(90));
  ASSERT_EQ(released.exit_code, 0) << released.output;
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        auto left = backendEntries(files);
        return !exists("bvm " + member + " -n " + ns) && left &&
               !left->count(ns + "_" + member + ".json");
      },
      kConverge))
      << namespaceState(ns);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("bvmpool sandboxes -n " + ns, "{.status.available}/{.status.claimed}") == "2/";
      },
      kConverge))
      << get("bvmpool sandboxes -n " + ns, "{.status}");
  EXPECT_THAT(words(get(members, "{.items[*].metadata.name}")), Not(Contains(member)));
  expectNoCrash(ns);
}

// Cluster API's infrastructure provider contract (issue #24, docs/adr/0050): a MachineDeployment
// of three replicas over the three failure domains of a VSphereCluster (vcsim with three
// clusters) and of a LibvirtCluster (three libvirt Providers, one host each). The test plays
// Cluster API core, whose controllers cannot be installed here, with core's v1beta2 CRDs: it
// spreads the Machines over the InfraCluster's failure domains, makes each bootstrap Secret and
// copies the machine template into one infrastructure machine per Machine, owned by it; then it
// waits for initialization.provisioned and copies providerID and addresses to the Machine, and
// deletes the Machines as a scale-down does. Everything else is banlieue's deployed roles.
class CapiTest : public FlowsTest {
 protected:
  // Cluster API is installed before its infrastructure providers (clusterctl's order): the
  // CRDs before the suite's controller starts, which looks for them once.
  void SetUp() override {
    if (!attempted_) {
      auto installed = cluster_.installClusterApiCrds();
      ASSERT_EQ(installed.exit_code, 0) << installed.output;
    }
    FlowsTest::SetUp();
  }

  void TearDown() override {
    for (const auto& ns : namespaces_) {
      cluster_.kubectl("delete machines.cluster.x-k8s.io --all --wait=true --timeout=90s -n " + ns,
                       std::chrono::seconds(120));
    }
    FlowsTest::TearDown();
  }

  // The failure domains InfraCluster `what` ("vspherecluster/prod") advertises, once it has
  // `count` of them.
  std::vector<std::string> failureDomains(const std::string& ns, const std::string& what,
                                          size_t count) {
    std::vector<std::string> names;
    EXPECT_TRUE(LocalCluster::eventually(
        [&] {
          std::istringstream in(get(what + " -n " + ns, "{.status.failureDomains[*].name}"));
          names.clear();
          for (std::string name; in >> name;) names.push_back(name);
          return names.size() == count;
        },
        kConverge))
        << get(what + " -n " + ns, "{.status}");
    return names;
  }

  // Cluster API core's part for MachineDeployment `md` of Cluster `cluster` (whose
  // infrastructureRef is `infra_cluster`, "VSphereCluster/prod"), one Machine per failure
  // domain, made from machine template `machine_template` of kind `machine_kind`.
  std::vector<std::string> scaleUp(const std::string& ns, const std::string& cluster,
                                   const std::string& infra_cluster, const std::string& md,
                                   const std::string& machine_kind,
                                   const std::string& machine_template,
                                   const std::vector<std::string>& fds) {
    const auto slash = infra_cluster.find('/');
    const std::string infra_ref =
        "{apiGroup: infrastructure.banlieue.io, kind: " + infra_cluster.substr(0, slash) +
        ", name: " + infra_cluster.substr(slash + 1) + "}";
    auto applied = cluster_.apply(
        "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: " + cluster +
        ", namespace: " + ns + "}\nspec:\n  infrastructureRef: " + infra_ref +
        "\n---\napiVersion: cluster.x-k8s.io/v1beta2\nkind: MachineDeployment\nmetadata: {name: " +
        md + ", namespace: " + ns + "}\nspec:\n  clusterName: " + cluster +
        "\n  replicas: " + std::to_string(fds.size()) +
        "\n  selector: {matchLabels: {cluster.x-k8s.io/deployment-name: " + md +
        "}}\n  template:\n    metadata: {labels: {cluster.x-k8s.io/deployment-name: " + md +
        "}}\n    spec:\n      clusterName: " + cluster +
        "\n      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: "
        "KubeadmConfigTemplate, name: " +
        md +
        "}}\n      infrastructureRef: {apiGroup: "
        "infrastructure.banlieue.io, kind: " +
        machine_kind + "Template, name: " + machine_template + "}\n");
    EXPECT_EQ(applied.exit_code, 0) << applied.output;
    // What core copies: the template's spec.template (labels, annotations and spec).
    auto template_json = cluster_.kubectl("get " + machine_kind + "template " + machine_template +
                                          " -n " + ns + " -o json");
    EXPECT_EQ(template_json.exit_code, 0) << template_json.output;
    auto source = json::parse(template_json.output, "machine template");
    const auto* copied_spec = json::find(&source, "spec.template.spec");
    EXPECT_NE(copied_spec, nullptr);
    std::vector<std::string> machines;
    for (size_t i = 0; i < fds.size(); ++i) {
      const std::string name = md + "-" + std::to_string(i);
      machines.push_back(name);
      // The bootstrap provider's Secret, then the Machine naming it and its failure domain.
      auto made = cluster_.apply(
          "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name +
          "-bootstrap\n"
          "  namespace: " +
          ns + "\n  labels: {cluster.x-k8s.io/cluster-name: " + cluster +
          "}\ntype: cluster.x-k8s.io/secret\nstringData:\n  format: cloud-config\n"
          "  value: |\n    #cloud-config\n    hostname: " +
          name +
          "\n    runcmd: [kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml]\n"
          "---\napiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata:\n  name: " +
          name + "\n  namespace: " + ns + "\n  labels: {cluster.x-k8s.io/cluster-name: " + cluster +
          ", cluster.x-k8s.io/deployment-name: " + md + "}\nspec:\n  clusterName: " + cluster +
          "\n  bootstrap: {dataSecretName: " + name + "-bootstrap}\n  failureDomain: " + fds[i] +
          "\n  infrastructureRef: {apiGroup: infrastructure.banlieue.io, kind: " + machine_kind +
          ", name: " + name + "}\n");
      EXPECT_EQ(made.exit_code, 0) << made.output;
      const std::string machine_uid =
          get("machines.cluster.x-k8s.io " + name + " -n " + ns, "{.metadata.uid}");
      rapidjson::Document infra(rapidjson::kObjectType);
      auto& a = infra.GetAllocator();
      infra.AddMember("apiVersion", "infrastructure.banlieue.io/v1beta2", a);
      infra.AddMember("kind", json::stringValue(machine_kind, a), a);
      auto metadata = json::parse(R"({"name":")" + name + R"(","namespace":")" + ns +
                                      R"(","labels":{"cluster.x-k8s.io/cluster-name":")" + cluster +
                                      R"("},"ownerReferences":[{"apiVersion":)"
                                      R"("cluster.x-k8s.io/v1beta2","kind":"Machine","name":")" +
                                      name + R"(","uid":")" + machine_uid +
                                      R"(","controller":true,"blockOwnerDeletion":true}]})",
                                  "metadata");
      infra.AddMember("metadata", rapidjson::Value(metadata, a), a);
      if (copied_spec != nullptr) infra.AddMember("spec", rapidjson::Value(*copied_spec, a), a);
      auto created = cluster_.apply(json::serialize(infra));
      EXPECT_EQ(created.exit_code, 0) << created.output;
    }
    return machines;
  }

  // Core's wait: each infrastructure machine provisioned with a providerID, which core copies
  // to its Machine with the addresses.
  void waitProvisionedAndMirror(const std::string& ns, const std::string& kind,
                                const std::vector<std::string>& machines) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    for (const auto& name : machines) {
      const std::string what = kind + " " + name + " -n " + ns;
      const auto left = std::max(std::chrono::steady_clock::duration(std::chrono::seconds(1)),
                                 deadline - std::chrono::steady_clock::now());
      ASSERT_TRUE(LocalCluster::eventually(
          [&] {
            return get(what, "{.status.initialization.provisioned}") == "true" &&
                   !get(what, "{.spec.providerID}").empty();
          },
          std::chrono::duration_cast<std::chrono::seconds>(left)))
          << get(what, "{.metadata.labels}") << get(what, "{.status}");
      const std::string provider_id = get(what, "{.spec.providerID}");
      auto mirrored = cluster_.kubectl("patch machines.cluster.x-k8s.io " + name + " -n " + ns +
                                       " --type merge -p '{\"spec\":{\"providerID\":\"" +
                                       provider_id + "\"}}'");
      EXPECT_EQ(mirrored.exit_code, 0) << mirrored.output;
      auto addresses = get(what, "{.status.addresses}");
      if (!addresses.empty() && addresses.rfind("<error", 0) != 0) {
        auto status = cluster_.kubectl("patch machines.cluster.x-k8s.io " + name + " -n " + ns +
                                       " --subresource=status --type merge -p '{\"status\":{"
                                       "\"addresses\":" +
                                       addresses + "}}'");
        EXPECT_EQ(status.exit_code, 0) << status.output;
      }
    }
  }

  // A scale-down to zero: core deletes each Machine, whose infrastructure machine goes with it
  // (the garbage collector here, core's Machine controller in a real cluster).
  void scaleDown(const std::string& ns, const std::string& kind,
                 const std::vector<std::string>& machines) {
    for (const auto& name : machines) {
      auto deleted =
          cluster_.kubectl("delete machines.cluster.x-k8s.io " + name + " --wait=false -n " + ns);
      EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
    }
    EXPECT_TRUE(LocalCluster::eventually(
        [&] { return get(kind + " -n " + ns, "{.items[*].metadata.name}").empty(); },
        std::chrono::seconds(180)))
        << get(kind + " -n " + ns, "{.items[*].metadata.name}");
  }
};

std::string extraConfigValue(const vsphere::ObjectContent& vm, const std::string& key) {
  std::string value;
  for (pugi::xml_node option : vsphere::children(vm.node("config.extraConfig"), "OptionValue")) {
    if (vsphere::childText(option, "key").value_or("") == key) {
      value = vsphere::childText(option, "value").value_or("");
    }
  }
  return value;
}

TEST_F(CapiTest, AMachineDeploymentLandsOnePerFailureDomainOnVcsimAndLibvirt) {
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  ASSERT_TRUE(classServes("vsphere", "VSphereMachine"));
  // The controller and the providers read the bootstrap Secrets where bootstrap was told to.
  auto granted = bootstrapCommand({"--userdata-namespace", ns});
  ASSERT_EQ(granted.exit_code, 0) << granted.output;

  // --- vSphere: one vCenter whose three clusters are three failure domains -----------------
  const std::string address = cluster_.podReachableAddress();
  ASSERT_FALSE(address.empty());
  vsphere::testing::Vcsim vcsim({"-cluster", "3"}, address);
  vsphere::testing::Backend vcenter(vcsim);
  const std::set<std::string> vcenter_before = vcenter.vmNames();
  AtExit before_vcsim{[&] { removeWorkloads(); }};
  auto applied = cluster_.apply(
      "apiVersion: v1\nkind: Secret\nmetadata: {name: vc-creds, namespace: " + ns +
      "}\nstringData: {username: \"" + vsphere::testing::Vcsim::kUser + "\", password: \"" +
      vsphere::testing::Vcsim::kPassword +
      "\"}\n---\napiVersion: banlieue.io/v1alpha1\nkind: Provider\n"
      "metadata: {name: vcenter, namespace: " +
      ns +
      ", labels: {capi: vsphere}}\n"
      "spec:\n  providerClassRef: {name: vsphere}\n  connection: " +
      vcsim.providerConnection("vc-creds") +
      "\n  capabilities:\n"
      "    storageClasses: [{name: std, target: {datastore: LocalDS_0}}]\n"
      "    networkClasses: [{name: lan, target: {portGroup: VM Network}}]\n"
      "---\napiVersion: infrastructure.banlieue.io/v1beta2\nkind: VSphereCluster\n"
      "metadata: {name: prod, namespace: " +
      ns +
      "}\n"
      "spec:\n  providerSelector: {matchLabels: {capi: vsphere}}\n"
      "---\napiVersion: infrastructure.banlieue.io/v1beta2\nkind: VSphereMachineTemplate\n"
      "metadata: {name: workers, namespace: " +
      ns +
      "}\n"
      "spec:\n  template:\n    spec:\n      template: DC0_C0_RP0_VM0\n      numCpus: 1\n"
      "      memoryMiB: 512\n      firmware: efi\n      disks: [{name: os, sizeGiB: 2}]\n"
      "      network: [{name: eth0, portGroup: VM Network}]\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(waitFor(ns, "provider/vcenter", "Ready"));
  const auto vsphere_fds = failureDomains(ns, "vspherecluster/prod", 3);
  ASSERT_EQ(vsphere_fds.size(), 3u);
  auto vs_machines =
      scaleUp(ns, "vs", "VSphereCluster/prod", "vs-md-0", "VSphereMachine", "workers", vsphere_fds);
  waitProvisionedAndMirror(ns, "vspheremachine", vs_machines);
  ASSERT_FALSE(HasFatalFailure());
  std::set<std::string> clusters, pools;
  for (size_t i = 0; i < vs_machines.size(); ++i) {
    const std::string& name = vs_machines[i];
    const std::string what = "vspheremachine " + name + " -n " + ns;
    EXPECT_EQ(get(what, "{.spec.failureDomain}/{.spec.providerRef.name}/{.spec.datastore}"),
              vsphere_fds[i] + "/vcenter/LocalDS_0");
    clusters.insert(get(what, "{.spec.cluster}"));
    EXPECT_EQ(get("machines.cluster.x-k8s.io " + name + " -n " + ns, "{.spec.providerID}"),
              get(what, "{.spec.providerID}"));
    // In vCenter: the Machine's bootstrap data as cloud-init reads it, in its cluster's pool.
    auto vm = vcenter.vm(name, {"config.extraConfig", "resourcePool"});
    ASSERT_TRUE(vm.has_value()) << name << " is not in vCenter";
    EXPECT_EQ(extraConfigValue(*vm, "guestinfo.userdata"),
              common::encodeBase64("#cloud-config\nhostname: " + name +
                                   "\nruncmd: [kubeadm join --config "
                                   "/run/kubeadm/kubeadm-join-config.yaml]\n"));
    pools.insert(vm->moref("resourcePool").value);
  }
  EXPECT_EQ(clusters.size(), 3u) << ::testing::PrintToString(clusters);
  EXPECT_EQ(pools.size(), 3u) << "the three VMs are not in three clusters' pools";
  scaleDown(ns, "vspheremachine", vs_machines);
  std::set<std::string> left;
  for (const auto& name : vcenter.vmNames()) {
    if (!vcenter_before.count(name)) left.insert(name);
  }
  EXPECT_TRUE(left.empty()) << ::testing::PrintToString(left);

  // --- libvirt: three hosts, each a real libvirtd with a host name of its own -------------
  // (the test driver cannot upload a seed ISO). QEMU under TCG boots the echo guest's boot
  // sector from each pool; the seed ISO the bootstrap data became is a file in the pool.
  ASSERT_EQ(PrivateLibvirtd::unavailableReason(), "");
  const std::string pool = "capi-" + suffix_;
  const std::string base_volume = "echo-guest.raw";
  const std::vector<std::string> hosts = {"kvm-a", "kvm-b", "kvm-c"};
  std::vector<std::unique_ptr<ScratchDir>> scratch;
  std::vector<std::unique_ptr<PrivateLibvirtd>> daemons;
  AtExit before_the_daemons{[&] { removeWorkloads(); }};
  std::string providers = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (const auto& host : hosts) {
    scratch.push_back(std::make_unique<ScratchDir>());
    ASSERT_FALSE(scratch.back()->path.empty());
    daemons.push_back(std::make_unique<PrivateLibvirtd>());
    auto& libvirtd = *daemons.back();
    std::string error;
    ASSERT_TRUE(libvirtd.start(scratch.back()->path, pool, &error,
                               {.tls_address = address, .hostname = host + ".banlieue.test"}))
        << error;
    std::filesystem::permissions(libvirtd.poolPath(), kTraversable);
    ASSERT_TRUE(putEchoGuest(libvirtd, base_volume));
    providers += libvirtTlsSecret(ns, host + "-tls", libvirtd) + "," +
                 R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":")" +
                 host + R"(","namespace":")" + ns +
                 R"(","labels":{"capi":"libvirt"},)"
                 R"("annotations":{"libvirt.banlieue.io/domain-type":"qemu"}},)"
                 R"("spec":{"providerClassRef":{"name":"libvirt"},"connection":{"endpoint":")" +
                 libvirtd.tlsUri() + R"(","credentialsRef":{"name":")" + host +
                 R"(-tls"}},)"
                 R"("capabilities":{"storageClasses":[{"name":"std","target":{"pool":")" +
                 pool + R"("}}]}}},)";
  }
  providers.pop_back();  // the last comma
  providers += "]}";
  applied = cluster_.apply(providers);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  // BIOS firmware: the guest is a boot sector. No network: the place and the data are the point.
  applied = cluster_.apply(
      "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: LibvirtCluster\n"
      "metadata: {name: lab, namespace: " +
      ns +
      "}\n"
      "spec:\n  providerSelector: {matchLabels: {capi: libvirt}}\n"
      "---\napiVersion: infrastructure.banlieue.io/v1beta2\nkind: LibvirtMachineTemplate\n"
      "metadata: {name: workers, namespace: " +
      ns +
      "}\n"
      "spec:\n  template:\n    spec:\n      bootSource: {volume: " +
      base_volume +
      "}\n      firmware: bios\n      vcpus: 1\n      memoryMiB: 128\n"
      "      disks: [{name: root, sizeGiB: 1}]\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  for (const auto& host : hosts) ASSERT_TRUE(waitFor(ns, "provider/" + host, "Ready"));
  const auto libvirt_fds = failureDomains(ns, "libvirtcluster/lab", 3);
  ASSERT_EQ(libvirt_fds.size(), 3u);
  auto lv_machines =
      scaleUp(ns, "lv", "LibvirtCluster/lab", "lv-md-0", "LibvirtMachine", "workers", libvirt_fds);
  waitProvisionedAndMirror(ns, "libvirtmachine", lv_machines);
  ASSERT_FALSE(HasFatalFailure());
  for (size_t i = 0; i < lv_machines.size(); ++i) {
    const std::string& name = lv_machines[i];
    const std::string what = "libvirtmachine " + name + " -n " + ns;
    const std::string host = get(what, "{.spec.providerRef.name}");
    const auto at = std::find(hosts.begin(), hosts.end(), host);
    ASSERT_NE(at, hosts.end()) << host;
    auto& libvirtd = *daemons[static_cast<size_t>(at - hosts.begin())];
    EXPECT_EQ(get(what, "{.spec.failureDomain}/{.status.failureDomain}/{.spec.pool}"),
              libvirt_fds[i] + "/" + libvirt_fds[i] + "/" + pool);
    EXPECT_EQ(libvirt_fds[i], host + "-banlieue-test");
    // On that host: the domain, running, and its seed ISO holding the Machine's bootstrap data.
    const std::string domain = ns + "-" + name;
    EXPECT_EQ(get(what, "{.spec.domainName}"), domain);
    auto state = runCommand("virsh -q -c " + shellQuote(libvirtd.uri()) + " domstate " + domain);
    EXPECT_THAT(state.output, HasSubstr("running")) << state.output;
    std::ifstream iso(libvirtd.poolPath() / (domain + "-cidata.iso"), std::ios::binary);
    const std::string seed((std::istreambuf_iterator<char>(iso)), std::istreambuf_iterator<char>());
    EXPECT_THAT(seed, HasSubstr("#cloud-config\nhostname: " + name + "\n")) << domain;
  }
  scaleDown(ns, "libvirtmachine", lv_machines);
  for (auto& libvirtd : daemons) {
    auto left = runCommand("virsh -q -c " + shellQuote(libvirtd->uri()) + " list --all --name");
    EXPECT_EQ(left.output.find_first_not_of(" \n"), std::string::npos) << left.output;
    EXPECT_EQ(libvirtd->volumes(), std::set<std::string>{base_volume}) << libvirtd->log();
  }
  expectNoCrash(ns);
}

// The image pipeline as specified, in the bootstrapped install (issue #27): a Url VMImage with
// an isoOverlay for vSphere and libvirt, the test playing kairos-operator (its OSArtifact CRD,
// the build's artifacts PVC holding the ISO, the OSArtifact Ready), the bootstrapped
// imagebuilder's checksum Job recording the digest, and each Provider's import Jobs mounting
// the same PVC read-only and verifying against it: vcsim and a real libvirtd's dir pool, both
// where pods reach this machine. No checksum is pinned. An artifact changed afterwards fails
// closed on a forced re-import, with the reason on the zone row. Its own CTest test (label
// images), with its own bootstrap.
class ImagePipelineTest : public FlowsTest {};

TEST_F(ImagePipelineTest, AUrlImageIsBuiltVerifiedAndImportedIntoVSphereAndLibvirt) {
  const std::string build_ns = "banlieue-imagebuild";
  LocalCluster::TestNamespace scoped(cluster_);
  const std::string ns = useNamespace(scoped);
  ASSERT_TRUE(classServes("vsphere", "VSphereMachine"));
  const std::string address = cluster_.podReachableAddress();
  ASSERT_FALSE(address.empty());

  // kairos-operator's API: the bootstrapped imagebuilder finds it without a restart.
  auto crd = cluster_.kubectl(std::string("apply -f ") + IMAGES_TEST_DIR + "/osartifact-crd.yaml");
  ASSERT_EQ(crd.exit_code, 0) << crd.output;

  // --- the backends, where the provider pods and the import Jobs reach this machine --------
  ASSERT_EQ(PrivateLibvirtd::unavailableReason(), "");
  ScratchDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  PrivateLibvirtd libvirtd;
  const std::string pool = "img-" + suffix_;
  std::string error;
  ASSERT_TRUE(libvirtd.start(scratch.path, pool, &error, {.tls_address = address})) << error;
  // The host's second pool: the image is imported into each, by a Job of its own.
  const std::string second_pool = pool + "-b";
  ASSERT_TRUE(libvirtd.addPool(second_pool, &error)) << error;
  vsphere::testing::Vcsim vcsim({}, address);
  vsphere::testing::Backend vcenter(vcsim);
  const std::string image = "e2e-img-" + suffix_;
  // Before the backends go, however the test ends: the image (its Providers release it), then
  // the Providers.
  AtExit before_the_backends{[&] {
    cluster_.kubectl("delete bvmimage " + image + " --ignore-not-found --timeout=120s",
                     std::chrono::seconds(150));
    removeWorkloads();
  }};

  auto applied = cluster_.apply(
      R"({"apiVersion":"v1","kind":"List","items":[)" +
      libvirtTlsSecret(ns, "libvirt-tls", libvirtd) + "," +
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"kvm",)"
      R"("namespace":")" +
      ns + R"("},"spec":{"providerClassRef":{"name":"libvirt"},"connection":{"endpoint":")" +
      libvirtd.tlsUri() +
      R"(","credentialsRef":{"name":"libvirt-tls"}},)"
      R"("capabilities":{"storageClasses":[{"name":"std","target":{"pool":")" +
      pool + R"("}},{"name":"fast","target":{"pool":")" + second_pool + R"("}}]}}},)" +
      vcsimCredentialsSecret(ns, "vc-creds") + "," +
      R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"vcenter",)"
      R"("namespace":")" +
      ns + R"("},"spec":{"providerClassRef":{"name":"vsphere"},"connection":)" +
      vcsim.providerConnection("vc-creds") + R"(,"capabilities":{}}}]})");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;

  // --- what a platform team writes: the overlay's Secret and one Url image for both ---------
  const std::string overlay_secret = "e2e-overlay-" + suffix_;
  cluster_objects_.push_back("vmimage/" + image);
  cluster_objects_.push_back("secret/" + overlay_secret + " -n " + build_ns);
  applied = cluster_.apply(
      "apiVersion: v1\nkind: Secret\nmetadata: {name: " + overlay_secret +
      ", namespace: " + build_ns + "}\nstringData: {motd: \"built by banlieue\\n\"}\n---\n" +
      "apiVersion: banlieue.io/v1alpha1\nkind: VMImage\nmetadata: {name: " + image +
      "}\nspec:\n  osFamily: linux\n  sources:\n"
      "  - {providerClass: vsphere, kind: Url, ref: kairos, importFrom: quay.io/kairos/u:1}\n"
      "  - {providerClass: libvirt, kind: Url, ref: kairos, importFrom: quay.io/kairos/u:1}\n"
      "  template:\n    rootFolder: banlieue-templates\n    installMode: deferred\n"
      "    cpus: 1\n    memoryMib: 512\n    disk: {size: 1}\n"
      "    network: [{network: VM Network}]\n"
      "  isoOverlay:\n    secretRef: {name: " +
      overlay_secret + "}\n    files: [{key: motd, path: /etc/motd}]\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;

  // --- the test as kairos-operator: the build requested as specified ---------------------
  const std::string osa = image + "-build";
  const std::string what_osa = "osartifact " + osa + " -n " + build_ns;
  ASSERT_TRUE(LocalCluster::eventually([&] { return exists(what_osa); }, kConverge))
      << "the imagebuilder asked for no build" << systemState();
  EXPECT_EQ(get(what_osa, "{.spec.artifacts.iso}/{.spec.artifacts.overlayISOVolume}"),
            "true/iso-overlay");
  EXPECT_EQ(get(what_osa,
                "{.spec.volumes[0].secret.secretName}/{.spec.volumes[0].secret.items[0]"
                ".path}/{.spec.importers[0].name}"),
            overlay_secret + "/etc/motd/iso-overlay-materialize");
  // Its storage: PVC <osartifact>-artifacts, bound here to a hostPath volume of the node.
  const std::string pvc = osa + "-artifacts";
  const std::filesystem::path volume = scratch.path / "artifacts";
  std::filesystem::create_directories(volume);
  std::filesystem::permissions(volume, kTraversable);
  const std::string pv = "e2e-artifacts-" + suffix_;
  cluster_objects_.push_back("pv/" + pv);
  applied = cluster_.apply(
      "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: " + pv +
      "}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n"
      "  storageClassName: \"\"\n  hostPath: {path: " +
      volume.string() + ", type: Directory}\n  claimRef: {namespace: " + build_ns + ", name: " +
      pvc + "}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: " + pvc +
      ", namespace: " + build_ns +
      "}\nspec:\n  accessModes: [ReadWriteOnce]\n  storageClassName: \"\"\n  volumeName: " + pv +
      "\n  resources: {requests: {storage: 1Gi}}\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  // The ISO (any bytes do: vcsim and a dir pool store them as they are).
  std::string iso(size_t{768} << 10, '\0');
  for (size_t i = 0; i < iso.size(); i += 512) iso[i] = static_cast<char>(i / 512);
  const std::filesystem::path iso_file = volume / (osa + ".iso");
  std::ofstream(iso_file, std::ios::binary) << iso;
  auto built = cluster_.kubectl("patch " + what_osa +
                                " --subresource=status --type=merge -p "
                                "'{\"status\":{\"phase\":\"Ready\"}}'");
  ASSERT_EQ(built.exit_code, 0) << built.output;

  // --- what banlieue does: the digest of what was built, then every zone imported ---------
  const std::string digest = runCommand("sha256sum " + shellQuote(iso_file.string())).output;
  ASSERT_GE(digest.size(), 64u);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("bvmimage " + image,
                   "{.status.buildArtifact.phase}/{.status.buildArtifact"
                   ".checksum}") == "Ready/sha256:" + digest.substr(0, 64);
      },
      std::chrono::seconds(180)))
      << get("bvmimage " + image, "{.status.buildArtifact}") << systemState()
      << cluster_.kubectl("get jobs,pods,pvc -o wide -n " + build_ns).output;
  auto waited = cluster_.kubectl("wait --for=condition=Ready --timeout=240s bvmimage/" + image,
                                 std::chrono::seconds(270));
  ASSERT_EQ(waited.exit_code, 0) << waited.output << get("bvmimage " + image, "{.status}")
                                 << cluster_.kubectl("get jobs,pods -o wide -n " + build_ns).output;
  // Every zone of both Providers Ready with the backend's own name for the image.
  const std::string rows = get("bvmimage " + image,
                               "{range .status.perProvider[*]}{.providerName}:{range .zones[*]}"
                               "{.ready}={.resolvedRef} {end}|{end}");
  EXPECT_THAT(rows, ::testing::HasSubstr("kvm:true="));
  EXPECT_THAT(rows, ::testing::HasSubstr("vcenter:true=" + image));
  EXPECT_THAT(rows, ::testing::Not(::testing::HasSubstr("false"))) << rows;
  // ... and in the backends' own state: the template in vCenter, the volume in the pool.
  EXPECT_TRUE(vcenter.vmNames().count(image)) << ::testing::PrintToString(vcenter.vmNames());
  const std::string kvm_ref =
      get("bvmimage " + image, "{.status.perProvider[?(@.providerName==\"kvm\")].resolvedRef}");
  EXPECT_EQ(libvirtd.volumes(), std::set<std::string>{kvm_ref});
  EXPECT_EQ(libvirtd.volumes(second_pool), std::set<std::string>{kvm_ref});
  // libvirt's rows are per pool: <failure domain>/<pool>, each with its target.
  EXPECT_EQ(get("bvmimage " + image,
                "{range .status.perProvider[?(@.providerName==\"kvm\")].zones[*]}{.target}="
                "{.ready} {end}"),
            pool + "=true " + second_pool + "=true ");

  // --- the artifact changed on its volume after the build: a forced re-import refuses it --
  {
    std::fstream f(iso_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4242);
    f.put('\x7f');
  }
  ASSERT_EQ(
      cluster_.kubectl("annotate bvmimage " + image + " banlieue.io/force-reimport=1").exit_code,
      0);
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        return get("bvmimage " + image,
                   "{.status.perProvider[?(@.providerName==\"kvm\")].zones[0].reason}") ==
               "ChecksumMismatch";
      },
      std::chrono::seconds(180)))
      << get("bvmimage " + image, "{.status.perProvider}");
  EXPECT_EQ(libvirtd.volumes(), std::set<std::string>{kvm_ref}) << "nothing new reached the pool";
  EXPECT_EQ(libvirtd.volumes(second_pool), std::set<std::string>{kvm_ref});

  // Deleted while the backends run: the template and the volume go with the image.
  auto deleted =
      cluster_.kubectl("delete bvmimage " + image + " --timeout=120s", std::chrono::seconds(150));
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_FALSE(vcenter.vmNames().count(image));
  EXPECT_EQ(libvirtd.volumes(), std::set<std::string>{});
  EXPECT_EQ(libvirtd.volumes(second_pool), std::set<std::string>{});
  cluster_.kubectl("delete pvc " + pvc + " -n " + build_ns + " --wait=false");
}

}  // namespace
}  // namespace banlieue::testing
