// `banlieue provider` as its own process against the real apiserver, with the example "file"
// plugin (a third party's backend, loaded from the build's plugin directory like any other):
// the Provider becomes Ready with the plugin's failure domains; a FileMachine naming it is
// provisioned and deleted with its backend file; a create that outlives the provider process
// is resumed from status.operationToken, not begun twice; creates beyond the Provider's
// maxConcurrentCreates wait in line, saying so; a credentials rotation re-creates
// the instance without a restart; a plugin path outside the plugin directory is refused with
// a condition reason.
#include "tests/support/background_process.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

namespace banlieue::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

int countLines(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Runs `done` when it goes out of scope, however the test ends.
struct AtExit {
  explicit AtExit(std::function<void()> f) : done(std::move(f)) {}
  std::function<void()> done;
  AtExit(const AtExit&) = delete;
  AtExit& operator=(const AtExit&) = delete;
  ~AtExit() { done(); }
};

class ProviderRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The plugin's own CRD, as `banlieue bootstrap operator` would install it.
    auto& cluster = LocalCluster::shared();
    auto crd = cluster.installCrd(std::string(PLUGIN_DIR) + "/file/crds/filemachines.yaml",
                                  "filemachines.infrastructure.file.example.com");
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
  }

  void SetUp() override {
    ns_ = std::make_unique<LocalCluster::TestNamespace>(cluster_);
    class_ = "file-" + ns_->name();
    backend_dir_ = fs::temp_directory_path() / ("banlieue-file-" + ns_->name());
    fs::create_directories(backend_dir_);
  }

  void TearDown() override {
    provider_.reset();
    // No wait: an operator elsewhere in the cluster holds the class's in-use finalizer until
    // this test's namespace and its Provider are gone (ADR 0024).
    cluster_.kubectl("delete providerclass " + class_ + " --ignore-not-found --wait=false");
    std::error_code ec;
    fs::remove_all(backend_dir_, ec);
  }

  void applyClassAndProvider(const std::string& endpoint_query = "",
                             const std::string& plugin_path = "file",
                             const std::string& credentials = "") {
    std::string manifest = R"(apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: )" + class_ +
                           R"(}
spec:
  backend: file
  plugin: {path: ")" + plugin_path +
                           R"("}
---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: files, namespace: )" +
                           ns_->name() + R"(}
spec:
  providerClassRef: {name: )" +
                           class_ + R"(}
  connection:
    endpoint: "file://)" + backend_dir_.string() +
                           endpoint_query + R"("
)" + (credentials.empty() ? "" : "    credentialsRef: {name: " + credentials + "}\n");
    auto applied = cluster_.apply(manifest);
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }

  void startProvider(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> command{BANLIEUE_BINARY,
                                     "--log-level",
                                     "debug",
                                     "provider",
                                     "file",
                                     "--provider",
                                     ns_->name() + "/files",
                                     "--plugin-dir",
                                     PLUGIN_DIR,
                                     "--kubeconfig",
                                     cluster_.kubeconfig().string(),
                                     "--health-port",
                                     "0",
                                     "--metrics-port",
                                     "-1",
                                     "--credentials-poll-seconds",
                                     "1",
                                     "--leader-election-namespace",
                                     ns_->name()};
    command.insert(command.end(), extra.begin(), extra.end());
    provider_ = std::make_unique<BackgroundProcess>(
        command,
        // One pod name for the test's processes, as a container restarted in its pod keeps
        // it: a process started after a SIGKILL holds its predecessor's Lease at once.
        std::vector<std::string>{"POD_NAME=provider-" + ns_->name()});
    ASSERT_TRUE(provider_->started());
  }

  std::string jsonpath(const std::string& object, const std::string& path) {
    return cluster_.kubectl("get " + object + " -n " + ns_->name() + " -o jsonpath='" + path + "'")
        .output;
  }

  bool waitFor(const std::string& object, const std::string& condition,
               const std::string& timeout = "60s") {
    auto r = cluster_.kubectl("wait --for=condition=" + condition + " --timeout=" + timeout +
                                  " -n " + ns_->name() + " " + object,
                              90s);
    return r.exit_code == 0;
  }

  // `finalizer`: created carrying it, as the controller creates infra objects (docs/adr/0056).
  static std::string machineManifest(const std::string& ns, const std::string& name,
                                     const std::string& power = "PoweredOn",
                                     const std::string& finalizer = "") {
    return R"(apiVersion: infrastructure.file.example.com/v1alpha1
kind: FileMachine
metadata:
  name: )" +
           name + R"(
  namespace: )" +
           ns + R"(
  labels: {banlieue.io/provider: files})" +
           (finalizer.empty() ? "" : "\n  finalizers: [" + finalizer + "]") + R"(
spec:
  providerRef: {name: files}
  cpus: 2
  memoryMiB: 256
  desiredPowerState: )" +
           power + "\n";
  }

  void applyMachine(const std::string& name, const std::string& power = "PoweredOn",
                    const std::string& finalizer = "") {
    auto applied = cluster_.apply(machineManifest(ns_->name(), name, power, finalizer));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }

  // The reconcile calls that reached the file backend for `name` (its own `calls` count).
  int backendCalls(const std::string& name) {
    return countLines(readFile(backend_dir_ / "calls"), "reconcile " + ns_->name() + "/" + name);
  }

  // The passes over FileMachine `name` that made no plugin call because its last reply said it
  // was settled and its inputs had not changed since (the provider logs each at debug level).
  size_t skippedPasses(const std::string& name) {
    return occurrences(
        provider_ ? provider_->output() : "",
        "FileMachine " + ns_->name() + "/" + name + ": settled, inputs unchanged: no plugin call");
  }

  // A finalizer of someone else's on FileMachine `name`, after the provider's, added or removed
  // (false when it was not there): a change of the object that is none of a reconcile call's
  // inputs (metadata.finalizers), so a pass without a reason to call the backend.
  bool foreignFinalizer(const std::string& name, bool hold) {
    const std::string patch =
        hold ? R"([{"op":"add","path":"/metadata/finalizers/-","value":"banlieue.test/hold"}])"
             : R"([{"op":"test","path":"/metadata/finalizers/1","value":"banlieue.test/hold"},)"
               R"({"op":"remove","path":"/metadata/finalizers/1"}])";
    return cluster_
               .kubectl("patch filemachine " + name + " -n " + ns_->name() + " --type=json -p '" +
                        patch + "'")
               .exit_code == 0;
  }

  std::string diagnostics() {
    return "\n--- provider output ---\n" + (provider_ ? provider_->output() : "") +
           "\n--- objects ---\n" +
           cluster_.kubectl("get providers,filemachines -n " + ns_->name() + " -o yaml").output;
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  std::unique_ptr<LocalCluster::TestNamespace> ns_;
  std::string class_;
  fs::path backend_dir_;
  std::unique_ptr<BackgroundProcess> provider_;
};

TEST_F(ProviderRuntimeTest, TheProviderBecomesReadyWithThePluginsFailureDomains) {
  applyClassAndProvider();
  startProvider();
  ASSERT_TRUE(waitFor("provider/files", "Ready")) << diagnostics();
  EXPECT_EQ(jsonpath("provider files", "{.status.failureDomains[*].name}"), "local");
  EXPECT_EQ(
      jsonpath("provider files", "{.status.conditions[?(@.type==\"ProviderReachable\")].reason}"),
      "Connected");
  // At rest it writes nothing, though it re-reads the credentials every second: three passes
  // at rest (each logs a line at debug level) after reading the version, then compare.
  std::string version = jsonpath("provider files", "{.metadata.resourceVersion}");
  auto passes_at_rest = [&] {
    const std::string out = provider_->output();
    const std::string line = "credentials checked, introspection not due";
    size_t count = 0;
    for (size_t at = out.find(line); at != std::string::npos; at = out.find(line, at + 1)) ++count;
    return count;
  };
  const size_t passes_before = passes_at_rest();
  ASSERT_TRUE(LocalCluster::eventually([&] { return passes_at_rest() >= passes_before + 3; }))
      << provider_->output();
  EXPECT_EQ(jsonpath("provider files", "{.metadata.resourceVersion}"), version)
      << "who wrote it:\n"
      << cluster_.kubectl("get provider files -n " + ns_->name() + " --show-managed-fields -o yaml")
             .output;
  // Its own Lease, named after class and Provider.
  EXPECT_EQ(cluster_.kubectl("get lease banlieue-provider-" + class_ + "-files -n " + ns_->name())
                .exit_code,
            0);
}

// docs/adr/0043 (issue #21): once its plugin is loaded, the leading process publishes on its
// class what it serves, so the operator and the controller need no copy of the plugin; and
// publishes it again when someone removes it.
TEST_F(ProviderRuntimeTest, ItPublishesWhatItLoadedOnItsClassAndAgainWhenRemoved) {
  applyClassAndProvider();
  startProvider();
  ASSERT_TRUE(waitFor("provider/files", "Ready")) << diagnostics();
  const std::string cls = "providerclass " + class_;
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return jsonpath(cls, "{.status.plugin.name}") == "file";
  })) << jsonpath(cls, "{.status}")
      << diagnostics();
  EXPECT_EQ(jsonpath(cls, "{.status.plugin.infrastructureKinds[*].kind}"), "FileMachine");
  EXPECT_EQ(jsonpath(cls, "{.status.plugin.infrastructureKinds[*].apiVersion}"),
            "infrastructure.file.example.com/v1alpha1");
  EXPECT_EQ(jsonpath(cls, "{.status.plugin.observedGeneration}"),
            jsonpath(cls, "{.metadata.generation}"));
  EXPECT_THAT(jsonpath(cls, "{.status.plugin.operations}"), HasSubstr("introspect"));
  // What the controller puts on the infra objects it creates for this class (docs/adr/0056).
  EXPECT_EQ(jsonpath(cls, "{.status.plugin.machineFinalizer}"), "banlieue.io/provider-file");
  // The digest of the library it loaded, as sha256sum computes it.
  auto digest = runCommand("sha256sum " + std::string(PLUGIN_DIR) +
                           "/file/libbanlieue-provider-file.so | cut -d' ' -f1");
  ASSERT_EQ(digest.exit_code, 0) << digest.output;
  EXPECT_EQ(jsonpath(cls, "{.status.plugin.sha256}") + "\n", digest.output);

  // Removed by hand: back within the watch's round trip.
  auto client = cluster_.client();
  ASSERT_NE(client, nullptr);
  auto removed = client->patch(
      kube::ResourceType{"banlieue.io", "v1alpha1", "providerclasses", false}, "", class_,
      kube::PatchType::kJson, R"([{"op":"remove","path":"/status/plugin"}])", "status");
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath(cls, "{.status.plugin.name}") == "file";
  })) << jsonpath(cls, "{.status}")
      << diagnostics();
}

// Issue #23 (docs/adr/0056): a machine the controller created carrying the provider's
// finalizer costs the provider no finalizer write: its writes are the providerID and the
// status, and deletion still goes through it.
TEST_F(ProviderRuntimeTest, AMachineCreatedWithItsFinalizerCostsTheProviderNoFinalizerWrite) {
  applyClassAndProvider();
  startProvider();
  applyMachine("vm1", "PoweredOn", "banlieue.io/provider-file");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Ready")) << diagnostics();
  EXPECT_FALSE(jsonpath("filemachine vm1", "{.spec.providerID}").empty());
  // What each manager owns: the provider must own no finalizer (it never wrote one).
  const std::string owned = jsonpath(
      "filemachine vm1",
      R"({range .metadata.managedFields[*]}{.manager}:{.subresource}:{.fieldsV1}{"\n"}{end})");
  bool provider_wrote = false;
  std::istringstream lines(owned);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("banlieue.io/provider-file:", 0) != 0) continue;
    provider_wrote = true;
    EXPECT_THAT(line, ::testing::Not(HasSubstr("f:finalizers"))) << owned;
  }
  EXPECT_TRUE(provider_wrote) << owned;
  EXPECT_EQ(jsonpath("filemachine vm1", "{.metadata.finalizers}"),
            R"(["banlieue.io/provider-file"])");

  auto deleted = cluster_.kubectl("delete filemachine vm1 -n " + ns_->name() + " --timeout=60s");
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output << diagnostics();
  EXPECT_FALSE(fs::exists(backend_dir_ / (ns_->name() + "_vm1.json")));
}

TEST_F(ProviderRuntimeTest, AMachineIsProvisionedAndItsBackendFileRemovedOnDelete) {
  applyClassAndProvider();
  startProvider();
  applyMachine("vm1");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Ready")) << diagnostics();
  fs::path vm_file = backend_dir_ / (ns_->name() + "_vm1.json");
  EXPECT_TRUE(fs::exists(vm_file));
  EXPECT_EQ(jsonpath("filemachine vm1", "{.spec.providerID}"), "file://" + vm_file.string());
  EXPECT_EQ(jsonpath("filemachine vm1", "{.status.observedPowerState}"), "PoweredOn");
  EXPECT_EQ(jsonpath("filemachine vm1", "{.status.initialization.provisioned}"), "true");
  EXPECT_EQ(jsonpath("filemachine vm1", "{.metadata.finalizers}"),
            "[\"banlieue.io/provider-file\"]");

  // Power flows from spec to the backend and back into status.
  applyMachine("vm1", "PoweredOff");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("filemachine vm1", "{.status.observedPowerState}") == "PoweredOff";
  })) << diagnostics();
  EXPECT_THAT(readFile(vm_file), HasSubstr("\"stopped\""));

  // A machine naming another Provider is left alone, even with a matching label.
  auto foreign = cluster_.apply(R"(apiVersion: infrastructure.file.example.com/v1alpha1
kind: FileMachine
metadata: {name: other, namespace: )" +
                                ns_->name() + R"(, labels: {banlieue.io/provider: files}}
spec: {providerRef: {name: someone-else}, cpus: 1, memoryMiB: 128}
)");
  ASSERT_EQ(foreign.exit_code, 0) << foreign.output;

  auto deleted = cluster_.kubectl("delete filemachine vm1 -n " + ns_->name() + " --timeout=60s");
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output << diagnostics();
  EXPECT_FALSE(fs::exists(vm_file));
  EXPECT_EQ(jsonpath("filemachine other", "{.metadata.finalizers}"), "");
  EXPECT_FALSE(fs::exists(backend_dir_ / (ns_->name() + "_other.json")));
}

// Issue #23 (docs/adr/0054): a machine at rest costs its backend nothing. The file plugin says
// its machine is settled once its file is as the spec asks; the passes that change none of a
// call's inputs (the provider's own finalizer and providerID writes, a finalizer of someone
// else's) then make no plugin call, and a change of an input makes one. The file backend
// counts the calls that reach it (its `calls` file); each skipped pass is a line of the
// provider's debug log, the sign that the pass was made.
TEST_F(ProviderRuntimeTest, AMachineAtRestGetsNoBackendCallUntilItsInputsChange) {
  applyClassAndProvider();
  startProvider();
  applyMachine("vm1");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Ready")) << diagnostics();
  AtExit released([&] { foreignFinalizer("vm1", false); });  // the namespace can go
  // Our finalizer and providerID writes each bring the machine back after its call.
  ASSERT_TRUE(LocalCluster::eventually([&] { return skippedPasses("vm1") >= 1; }))
      << "no pass after the create was skipped\n"
      << readFile(backend_dir_ / "calls") << diagnostics();
  EXPECT_EQ(backendCalls("vm1"), 1) << "one call made the machine; our own writes call nothing\n"
                                    << readFile(backend_dir_ / "calls") << diagnostics();

  size_t skipped = skippedPasses("vm1");
  ASSERT_TRUE(foreignFinalizer("vm1", true));
  ASSERT_TRUE(LocalCluster::eventually([&] { return skippedPasses("vm1") > skipped; }))
      << diagnostics();
  EXPECT_EQ(backendCalls("vm1"), 1) << "a finalizer is no input: no call\n"
                                    << readFile(backend_dir_ / "calls");

  auto annotated =
      cluster_.kubectl("annotate filemachine vm1 banlieue.test/poke=1 -n " + ns_->name());
  ASSERT_EQ(annotated.exit_code, 0) << annotated.output;
  EXPECT_TRUE(LocalCluster::eventually([&] { return backendCalls("vm1") == 2; }))
      << "an annotation is an input: one call\n"
      << readFile(backend_dir_ / "calls");
  applyMachine("vm1", "PoweredOff");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("filemachine vm1", "{.status.observedPowerState}") == "PoweredOff";
  })) << diagnostics();
  EXPECT_THAT(readFile(backend_dir_ / (ns_->name() + "_vm1.json")), HasSubstr("\"stopped\""));

  skipped = skippedPasses("vm1");
  ASSERT_TRUE(foreignFinalizer("vm1", false));
  ASSERT_TRUE(LocalCluster::eventually([&] { return skippedPasses("vm1") > skipped; }))
      << diagnostics();
  EXPECT_EQ(backendCalls("vm1"), 3) << "a spec change: one call, and none since\n"
                                    << readFile(backend_dir_ / "calls");
}

// The other side of the same contract: a plugin whose replies do not say "settled" (one built
// before the flag; here the file plugin with settle=false) is called on every pass, as before:
// the pass its own finalizer and providerID writes cause calls it again, and so does a change
// that is no input. Some plugins need those passes (docs/adr/0054).
TEST_F(ProviderRuntimeTest, APluginThatNeverSaysSettledIsCalledOnEveryPass) {
  applyClassAndProvider("?settle=false");
  startProvider();
  applyMachine("vm1");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Ready")) << diagnostics();
  AtExit released([&] { foreignFinalizer("vm1", false); });  // the namespace can go
  EXPECT_TRUE(LocalCluster::eventually([&] { return backendCalls("vm1") >= 2; }))
      << "the pass our own writes cause calls an unsettled plugin again\n"
      << readFile(backend_dir_ / "calls") << diagnostics();
  const int before = backendCalls("vm1");
  ASSERT_TRUE(foreignFinalizer("vm1", true));
  EXPECT_TRUE(LocalCluster::eventually([&] { return backendCalls("vm1") > before; }))
      << readFile(backend_dir_ / "calls") << diagnostics();
  EXPECT_EQ(skippedPasses("vm1"), 0u) << diagnostics();
}

// Issue #23 (docs/adr/0057): with the plugin's change feed, a settled machine's resync makes no
// backend call; a change behind banlieue's back (the VM file edited, then removed) is reported
// by the feed and corrected by one call, for that machine only.
TEST_F(ProviderRuntimeTest, TheChangeFeedNotTheResyncFindsAMachineChangedAtTheBackend) {
  applyClassAndProvider();
  startProvider({"--resync-seconds", "2"});
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return occurrences(provider_->output(), "following the backend's changes") >= 1;
  })) << diagnostics();
  applyMachine("vm1");
  applyMachine("vm2");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Ready")) << diagnostics();
  ASSERT_TRUE(waitFor("filemachine/vm2", "Ready")) << diagnostics();
  const std::string covered = ": resync due, covered by the change feed: no plugin call";
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return occurrences(provider_->output(), "FileMachine " + ns_->name() + "/vm1" + covered) >= 2;
  })) << "two resyncs of vm1 came and went\n"
      << diagnostics();
  EXPECT_EQ(backendCalls("vm1"), 1) << readFile(backend_dir_ / "calls");
  EXPECT_EQ(backendCalls("vm2"), 1) << readFile(backend_dir_ / "calls");

  // Powered off behind banlieue's back: the feed names vm1, whose one call powers it on again.
  const fs::path vm1_file = backend_dir_ / (ns_->name() + "_vm1.json");
  std::string edited = readFile(vm1_file);
  auto running = edited.find("\"running\"");
  ASSERT_NE(running, std::string::npos) << edited;
  edited.replace(running, 9, "\"stopped\"");
  std::ofstream(vm1_file, std::ios::trunc) << edited;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return backendCalls("vm1") == 2 && readFile(vm1_file).find("\"running\"") != std::string::npos;
  })) << readFile(backend_dir_ / "calls")
      << diagnostics();

  // Removed behind its back: made again.
  fs::remove(vm1_file);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return backendCalls("vm1") == 3 && fs::exists(vm1_file);
  })) << readFile(backend_dir_ / "calls")
      << diagnostics();
  EXPECT_EQ(backendCalls("vm2"), 1) << "only the machine that changed is called\n"
                                    << readFile(backend_dir_ / "calls");
}

// The same machine without the feed (--watch-seconds 0, as for a plugin that has none): each
// resync calls the backend, which is what the feed spares.
TEST_F(ProviderRuntimeTest, WithoutAChangeFeedEachResyncCallsTheBackend) {
  applyClassAndProvider();
  startProvider({"--resync-seconds", "2", "--watch-seconds", "0"});
  applyMachine("vm1");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Ready")) << diagnostics();
  EXPECT_TRUE(LocalCluster::eventually([&] { return backendCalls("vm1") >= 3; }))
      << readFile(backend_dir_ / "calls") << diagnostics();
  EXPECT_EQ(occurrences(provider_->output(), "following the backend's changes"), 0u);
}

// Cluster API's pause (issue #24, docs/adr/0050): with cluster.x-k8s.io/paused on it, a machine
// gets no backend call, not even its deletion, and says Paused; the annotation's removal
// resumes it.
TEST_F(ProviderRuntimeTest, AMachineClusterApiPausedIsLeftAloneUntilResumed) {
  applyClassAndProvider();
  startProvider();
  applyMachine("vm1");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Ready")) << diagnostics();
  const fs::path vm_file = backend_dir_ / (ns_->name() + "_vm1.json");
  ASSERT_TRUE(fs::exists(vm_file));
  auto annotate = [&](const std::string& what) {
    auto r = cluster_.kubectl("annotate filemachine vm1 " + what + " -n " + ns_->name());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  };
  annotate("cluster.x-k8s.io/paused=");
  ASSERT_TRUE(waitFor("filemachine/vm1", "Paused")) << diagnostics();
  // Deleted while paused: the finalizer stays and the backend file with it.
  auto deleted = cluster_.kubectl("delete filemachine vm1 --wait=false -n " + ns_->name());
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  // A pass over the machine happens on each change; another pass shows nothing moves.
  annotate("banlieue.test/poke=1");
  EXPECT_EQ(jsonpath("filemachine vm1", "{.status.conditions[?(@.type==\"Paused\")].status}"),
            "True");
  std::this_thread::sleep_for(2s);  // what a runaway deletion would need; none must happen
  EXPECT_TRUE(fs::exists(vm_file)) << diagnostics();
  EXPECT_EQ(jsonpath("filemachine vm1", "{.metadata.finalizers}"),
            "[\"banlieue.io/provider-file\"]");
  // Resumed: the deletion goes through.
  annotate("cluster.x-k8s.io/paused-");
  EXPECT_TRUE(LocalCluster::eventually([&] { return !fs::exists(vm_file); })) << diagnostics();
  EXPECT_TRUE(LocalCluster::eventually(
      [&] { return cluster_.kubectl("get filemachine vm1 -n " + ns_->name()).exit_code != 0; }));
}

TEST_F(ProviderRuntimeTest, ItWritesOnlyItsOwnRowOfAVMImage) {
  std::string image = "img-" + ns_->name();
  auto applied = cluster_.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: )" + image + R"(}
spec:
  sources:
  - {providerClass: )" + class_ +
                                R"(, kind: BackingFile, ref: base.img}
  - {providerClass: elsewhere, kind: Template, ref: tpl}
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  // Another Provider's row, written under its own field manager, must survive ours.
  auto client = cluster_.client();
  kube::ApplyOptions other;
  other.field_manager = "banlieue.io/provider-elsewhere/x/y";
  other.subresource = "status";
  ASSERT_TRUE(
      client
          ->apply({"banlieue.io", "v1alpha1", "vmimages", false}, "", image,
                  R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":")" +
                      image + R"("},"status":{"perProvider":[{"providerName":"y",
                              "providerNamespace":"x","ready":false,"reason":"Other"}]}})",
                  other)
          .ok());
  applyClassAndProvider();
  startProvider();
  std::string row = "{.status.perProvider[?(@.providerName==\"files\")]";
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return cluster_.kubectl("get vmimage " + image + " -o jsonpath='" + row + ".ready}'").output ==
           "true";
  })) << diagnostics()
      << cluster_.kubectl("get vmimage " + image + " -o yaml").output;
  EXPECT_EQ(
      cluster_.kubectl("get vmimage " + image + " -o jsonpath='" + row + ".zones[*].name}'").output,
      "local");
  EXPECT_EQ(
      cluster_
          .kubectl("get vmimage " + image + " -o jsonpath='{.status.perProvider[*].providerName}'")
          .output,
      "y files");
  cluster_.kubectl("delete vmimage " + image);
}

TEST_F(ProviderRuntimeTest, ACreateThatOutlivesTheProcessIsResumedNotBegunTwice) {
  applyClassAndProvider("?createSeconds=4");
  startProvider();
  applyMachine("slow");
  // The backend task is recorded in status before the process dies.
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return !jsonpath("filemachine slow", "{.status.operationToken}").empty();
  })) << diagnostics();
  std::string token = jsonpath("filemachine slow", "{.status.operationToken}");
  EXPECT_EQ(jsonpath("filemachine slow", "{.status.conditions[?(@.type==\"Ready\")].reason}"),
            "InProgress");
  provider_->stop(SIGKILL);

  startProvider();
  ASSERT_TRUE(waitFor("filemachine/slow", "Ready", "90s")) << diagnostics();
  std::string journal = readFile(backend_dir_ / "journal");
  EXPECT_EQ(countLines(journal, "create-started"), 1) << journal;
  EXPECT_EQ(countLines(journal, "create-finished"), 1) << journal;
  EXPECT_EQ(jsonpath("filemachine slow", "{.status.operationToken}"), "");
  EXPECT_EQ(token, "create/" + jsonpath("filemachine slow", "{.metadata.uid}"));
}

// The journal's create-started / create-finished lines in order: the most creates that ran at
// the backend at once.
int mostAtOnce(const std::string& journal) {
  int running = 0;
  int most = 0;
  std::istringstream in(journal);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("create-started", 0) == 0) most = std::max(most, ++running);
    if (line.rfind("create-finished", 0) == 0) --running;
  }
  return most;
}

TEST_F(ProviderRuntimeTest, AProviderRunsAtMostItsCreateSlotsAtOnceAndTheRestWaitInLine) {
  applyClassAndProvider("?createSeconds=3");
  ASSERT_EQ(cluster_
                .kubectl("patch provider files -n " + ns_->name() +
                         " --type merge -p '{\"spec\":{\"maxConcurrentCreates\":2}}'")
                .exit_code,
            0);
  startProvider();
  ASSERT_TRUE(waitFor("provider/files", "Ready")) << diagnostics();
  // One apply makes all five at once. Five applies in a row could arrive further apart than
  // half a create under load, and then no machine would ever have to wait (seen in CI on
  // 2026-12-07).
  std::string all;
  for (const char* name : {"m1", "m2", "m3", "m4", "m5"}) {
    all += "---\n" + machineManifest(ns_->name(), name);
  }
  auto applied = cluster_.apply(all);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  // While two create, the others say why they wait.
  std::string waiting;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    waiting = jsonpath("filemachines",
                       "{.items[*].status.conditions[?(@.reason==\"WaitingFor"
                       "CreateSlot\")].message}");
    return !waiting.empty();
  })) << diagnostics();
  EXPECT_THAT(waiting, HasSubstr("runs at most 2 backend creates at once"));
  for (const char* name : {"m1", "m2", "m3", "m4", "m5"}) {
    ASSERT_TRUE(waitFor(std::string("filemachine/") + name, "Ready", "90s")) << diagnostics();
  }
  std::string journal = readFile(backend_dir_ / "journal");
  EXPECT_EQ(countLines(journal, "create-started"), 5) << journal;
  EXPECT_EQ(countLines(journal, "create-finished"), 5) << journal;
  EXPECT_EQ(mostAtOnce(journal), 2) << "two slots, both used, never a third\n" << journal;
}

TEST_F(ProviderRuntimeTest, RotatedCredentialsRecreateTheInstanceWithoutARestart) {
  ASSERT_EQ(
      cluster_.kubectl("create secret generic creds --from-literal=token=one -n " + ns_->name())
          .exit_code,
      0);
  applyClassAndProvider("", "file", "creds");
  startProvider();
  ASSERT_TRUE(waitFor("provider/files", "Ready")) << diagnostics();
  ASSERT_EQ(cluster_
                .kubectl("create secret generic creds --from-literal=token=two -n " + ns_->name() +
                         " --dry-run=client -o yaml | " + LocalCluster::kubectlBinary() +
                         " --kubeconfig " + cluster_.kubeconfig().string() + " apply -f -")
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return provider_->output().find("instance re-created") != std::string::npos;
  })) << diagnostics();
  EXPECT_FALSE(provider_->exited());
  EXPECT_THAT(provider_->output(), ::testing::Not(HasSubstr("two")));  // secrets never logged

  // A Secret that disappears is a reason on the Provider, not a crash.
  ASSERT_EQ(cluster_.kubectl("delete secret creds -n " + ns_->name()).exit_code, 0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("provider files", "{.status.conditions[?(@.type==\"Ready\")].reason}") ==
           "CredentialsNotFound";
  })) << diagnostics();
  EXPECT_FALSE(provider_->exited());
}

TEST_F(ProviderRuntimeTest, APluginPathOutsideThePluginDirectoryIsRefused) {
  applyClassAndProvider("", "../../../../usr/lib");
  startProvider();
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("provider files", "{.status.conditions[?(@.type==\"Ready\")].reason}") ==
           "PluginPathInvalid";
  })) << diagnostics();
  EXPECT_FALSE(provider_->exited());
  // Fixing the class lets the same process load the plugin.
  applyClassAndProvider();
  EXPECT_TRUE(waitFor("provider/files", "Ready", "90s")) << diagnostics();
}

TEST_F(ProviderRuntimeTest, AnUnusableBackendIsAConditionReasonAndRecovers) {
  applyClassAndProvider("?createSeconds=x");
  startProvider();
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("provider files", "{.status.conditions[?(@.type==\"Ready\")].reason}") ==
           "InvalidEndpoint";
  })) << diagnostics();
  applyMachine("waiting");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("filemachine waiting", "{.status.conditions[?(@.type==\"Ready\")].reason}") ==
           "ProviderNotConnected";
  })) << diagnostics();
  applyClassAndProvider();
  EXPECT_TRUE(waitFor("filemachine/waiting", "Ready", "90s")) << diagnostics();
}

}  // namespace
}  // namespace banlieue::testing
