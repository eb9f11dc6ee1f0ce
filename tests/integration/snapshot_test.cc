// VirtualMachineSnapshot and VirtualMachineRestore against the real apiserver (issue #20,
// docs/adr/0039): the controller's binder (run here in-process, alone) binds them to the
// Provider of the VM's machine, and `banlieue provider file` (its own process, the example
// file plugin's snapshot slot) makes, reverts and removes them. The test plays the controller's
// VM placement: it writes the VirtualMachine's status.scheduled and status.infrastructureRef.
#include "host/roles/common/snapshot_binding.h"
#include "host/roles/controller/snapshot_binder.h"
#include "host/roles/controller/vm_reconciler.h"
#include "tests/integration/deployed_controller.h"
#include "tests/support/background_process.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <thread>

namespace banlieue::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

int countLines(const std::string& text, const std::string& prefix) {
  int n = 0;
  size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    ++n;
    at += prefix.size();
  }
  return n;
}

// The controller's two binders with their informers and work queues, in this process.
class Binders {
 public:
  Binders(kube::KubeClient& client, const std::string& ns)
      : vms_(client, controller::resources::kVirtualMachine, {.ns = ns}),
        snapshots_(client, roles::kVirtualMachineSnapshotType, {.ns = ns}),
        restores_(client, roles::kVirtualMachineRestoreType, {.ns = ns}),
        snapshot_binder_(client, controller::SnapshotBinder::Kind::kSnapshot, snapshots_, vms_),
        restore_binder_(client, controller::SnapshotBinder::Kind::kRestore, restores_, snapshots_),
        snapshot_controller_("virtualmachinesnapshot", snapshot_binder_, {.workers = 1}),
        restore_controller_("virtualmachinerestore", restore_binder_, {.workers = 1}) {
    snapshot_controller_.watch(snapshots_, runtime::Controller::Updates::kIgnoreStatusOnly);
    snapshot_controller_.watchMapped(
        vms_, [this](const runtime::Object& vm) { return snapshot_binder_.namingKeys(vm); });
    restore_controller_.watch(restores_, runtime::Controller::Updates::kIgnoreStatusOnly);
    restore_controller_.watchMapped(snapshots_, [this](const runtime::Object& snapshot) {
      return restore_binder_.namingKeys(snapshot);
    });
    for (auto* informer : {&vms_, &snapshots_, &restores_}) {
      threads_.emplace_back([this, informer] { informer->run(stop_); });
    }
    threads_.emplace_back([this] { snapshot_controller_.run(stop_); });
    threads_.emplace_back([this] { restore_controller_.run(stop_); });
  }
  ~Binders() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  runtime::Informer vms_, snapshots_, restores_;
  controller::SnapshotBinder snapshot_binder_, restore_binder_;
  runtime::Controller snapshot_controller_, restore_controller_;
  std::vector<std::thread> threads_;
};

class SnapshotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto crd =
        LocalCluster::shared().installCrd(std::string(PLUGIN_DIR) + "/file/crds/filemachines.yaml",
                                          "filemachines.infrastructure.file.example.com");
    ASSERT_EQ(crd.exit_code, 0) << crd.output;
  }

  void SetUp() override {
    ns_ = std::make_unique<LocalCluster::TestNamespace>(cluster_);
    class_ = "file-" + ns_->name();
    backend_dir_ = fs::temp_directory_path() / ("banlieue-snapshots-" + ns_->name());
    fs::create_directories(backend_dir_);
    client_ = cluster_.client();
    ASSERT_NE(client_, nullptr);
    // The test plays the controller's placement on its VMs: no deployed controller may act on
    // them meanwhile.
    ASSERT_TRUE(deployed_controller_.idle());
    auto applied = cluster_.apply(R"(apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: )" + class_ + R"(}
spec:
  backend: file
  plugin: {path: file}
---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: files, namespace: )" +
                                  ns_->name() + R"(}
spec:
  providerClassRef: {name: )" + class_ +
                                  R"(}
  connection: {endpoint: "file://)" +
                                  backend_dir_.string() + R"("}
)");
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    startProvider();
    binders_ = std::make_unique<Binders>(*client_, ns_->name());
  }

  void TearDown() override {
    binders_.reset();
    provider_.reset();
    deployed_controller_.restore();
    cluster_.kubectl("delete providerclass " + class_ + " --ignore-not-found --wait=false");
    std::error_code ec;
    fs::remove_all(backend_dir_, ec);
  }

  void startProvider() {
    provider_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        BANLIEUE_BINARY, "--log-level", "debug", "provider", "file", "--provider",
        ns_->name() + "/files", "--plugin-dir", PLUGIN_DIR, "--kubeconfig",
        cluster_.kubeconfig().string(), "--health-port", "0", "--metrics-port", "-1",
        "--leader-election-namespace", ns_->name()});
    ASSERT_TRUE(provider_->started());
  }

  void apply(const std::string& yaml) {
    auto applied = cluster_.apply(yaml);
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  }

  // A VirtualMachine placed on the Provider `files` as the FileMachine `name`, provisioned.
  void placedVm(const std::string& name) {
    apply(R"(apiVersion: infrastructure.file.example.com/v1alpha1
kind: FileMachine
metadata: {name: )" +
          name + ", namespace: " + ns_->name() + R"(, labels: {banlieue.io/provider: files}}
spec: {providerRef: {name: files}, cpus: 2, memoryMiB: 256, desiredPowerState: PoweredOn}
---
apiVersion: banlieue.io/v1alpha1
kind: VirtualMachine
metadata: {name: )" +
          name + ", namespace: " + ns_->name() + R"(}
spec: {classRef: {name: small}, imageRef: {name: none}}
)");
    ASSERT_TRUE(waitFor("filemachine/" + name, "condition=Ready")) << diagnostics();
    auto patched = client_->patch(
        controller::resources::kVirtualMachine, ns_->name(), name, kube::PatchType::kMerge,
        R"({"status":{"scheduled":{"providerName":"files","failureDomain":"local"},)"
        R"("infrastructureRef":{"apiGroup":"infrastructure.file.example.com",)"
        R"("kind":"FileMachine","name":")" +
            name + R"("}}})",
        "status");
    ASSERT_TRUE(patched.ok()) << patched.status().message();
  }

  void snapshot(const std::string& name, const std::string& vm, bool memory = false) {
    apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VirtualMachineSnapshot
metadata: {name: )" +
          name + ", namespace: " + ns_->name() + R"(}
spec: {virtualMachineName: )" +
          vm + ", memory: " + (memory ? "true" : "false") + "}\n");
  }

  void restore(const std::string& name, const std::string& vm, const std::string& snapshot) {
    apply(R"(apiVersion: banlieue.io/v1alpha1
kind: VirtualMachineRestore
metadata: {name: )" +
          name + ", namespace: " + ns_->name() + R"(}
spec: {virtualMachineName: )" +
          vm + ", snapshotName: " + snapshot + "}\n");
  }

  // kubectl wait, once more after a failure that is kubectl's own (a 1.32 client against a
  // busy 1.20 apiserver once failed at once on a snapshot that was Ready: CI), whose output is
  // printed.
  bool waitFor(const std::string& object, const std::string& what) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto r = cluster_.kubectl(
          "wait --for=" + what + " --timeout=60s -n " + ns_->name() + " " + object, 90s);
      if (r.exit_code == 0) return true;
      std::cerr << "kubectl wait --for=" << what << " " << object << ": " << r.output << "\n";
      if (r.output.find("timed out") != std::string::npos) return false;
    }
    return false;
  }

  std::string jsonpath(const std::string& object, const std::string& path) {
    return cluster_.kubectl("get " + object + " -n " + ns_->name() + " -o jsonpath='" + path + "'")
        .output;
  }

  std::string reason(const std::string& object, const std::string& type) {
    return jsonpath(object, "{.status.conditions[?(@.type==\"" + type + "\")].reason}");
  }

  std::string journal() { return readFile(backend_dir_ / "journal"); }

  std::string diagnostics() {
    return "\n--- provider output ---\n" + (provider_ ? provider_->output() : "") +
           "\n--- objects ---\n" +
           cluster_
               .kubectl("get filemachines,virtualmachinesnapshots,virtualmachinerestores -n " +
                        ns_->name() + " -o yaml")
               .output;
  }

  LocalCluster& cluster_ = LocalCluster::shared();
  std::unique_ptr<LocalCluster::TestNamespace> ns_;
  std::shared_ptr<kube::KubeClient> client_;
  std::string class_;
  fs::path backend_dir_;
  std::unique_ptr<BackgroundProcess> provider_;
  std::unique_ptr<Binders> binders_;
  DeployedController deployed_controller_{cluster_};
};

TEST_F(SnapshotTest, ASnapshotIsTakenOnceRestoredOnceAndRemovedWithItsObject) {
  // Named before its VM exists: the binder says so, and binds it when the VM is placed.
  snapshot("before-upgrade", "vm1");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return reason("virtualmachinesnapshot before-upgrade", "Ready") == "VirtualMachineNotFound";
  })) << diagnostics();
  placedVm("vm1");
  ASSERT_TRUE(waitFor("virtualmachinesnapshot/before-upgrade", "condition=Ready")) << diagnostics();
  EXPECT_EQ(jsonpath("virtualmachinesnapshot before-upgrade",
                     "{.metadata.labels.banlieue\\.io/provider}"),
            "files");
  EXPECT_EQ(jsonpath("virtualmachinesnapshot before-upgrade", "{.status.machineRef.kind}"),
            "FileMachine");
  EXPECT_EQ(jsonpath("virtualmachinesnapshot before-upgrade", "{.metadata.finalizers}"),
            "[\"banlieue.io/provider-file\"]");
  const std::string ref =
      jsonpath("virtualmachinesnapshot before-upgrade", "{.status.snapshotRef}");
  ASSERT_THAT(ref, HasSubstr("before-upgrade-")) << "the backend name: the object's, and its uid";
  const fs::path copy = backend_dir_ / (ns_->name() + "_vm1.json.snapshots") / (ref + ".json");
  EXPECT_TRUE(fs::exists(copy)) << copy;
  auto columns = cluster_.kubectl("get bvmsnap -n " + ns_->name());
  EXPECT_THAT(columns.output, HasSubstr("vm1"));
  EXPECT_THAT(columns.output, HasSubstr("Created"));

  // A restarted provider finds the snapshot made: no second create, no backend call at rest.
  provider_.reset();
  startProvider();
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(countLines(journal(), "snapshot-created "), 1) << journal();

  restore("undo", "vm1", "before-upgrade");
  ASSERT_TRUE(waitFor("virtualmachinerestore/undo", "condition=Complete")) << diagnostics();
  EXPECT_EQ(reason("virtualmachinerestore undo", "Complete"), "Restored");
  EXPECT_FALSE(jsonpath("virtualmachinerestore undo", "{.status.restoredAt}").empty());
  EXPECT_EQ(countLines(journal(), "reverted "), 1) << journal();
  // Performed once: a later pass (the snapshot's update maps to it) does not revert again.
  cluster_.kubectl("annotate virtualmachinesnapshot before-upgrade -n " + ns_->name() +
                   " touched=1");
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(countLines(journal(), "reverted "), 1) << journal();

  auto deleted = cluster_.kubectl("delete virtualmachinesnapshot before-upgrade -n " + ns_->name() +
                                  " --timeout=60s");
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output << diagnostics();
  EXPECT_FALSE(fs::exists(copy)) << "the backend's snapshot goes before the object";
}

// The verbs people use (`kubectl banlieue vm snapshot|restore`): they create the objects and
// wait for them, and a name that does not exist is an error at once.
TEST_F(SnapshotTest, TheVmVerbsSnapshotAndRestoreAndWait) {
  placedVm("vm4");
  auto taken = cluster_.kubectlBanlieue(
      "vm snapshot vm4 --snapshot-name by-verb --timeout 60 -n " + ns_->name(), 90s);
  EXPECT_EQ(taken.exit_code, 0) << taken.output << diagnostics();
  EXPECT_THAT(taken.output, HasSubstr("snapshot done"));
  EXPECT_EQ(reason("virtualmachinesnapshot by-verb", "Ready"), "Created");
  auto restored = cluster_.kubectlBanlieue(
      "vm restore vm4 --snapshot by-verb --timeout 60 -n " + ns_->name(), 90s);
  EXPECT_EQ(restored.exit_code, 0) << restored.output << diagnostics();
  EXPECT_THAT(restored.output, HasSubstr("restore done"));
  EXPECT_EQ(countLines(journal(), "reverted "), 1) << journal();

  auto no_vm = cluster_.kubectlBanlieue("vm snapshot nosuchvm -n " + ns_->name(), 30s);
  EXPECT_NE(no_vm.exit_code, 0);
  EXPECT_THAT(no_vm.output, HasSubstr("does not exist"));
  auto no_snapshot =
      cluster_.kubectlBanlieue("vm restore vm4 --snapshot nosuch -n " + ns_->name(), 30s);
  EXPECT_NE(no_snapshot.exit_code, 0);
  EXPECT_THAT(no_snapshot.output,
              HasSubstr("virtualmachinesnapshot " + ns_->name() + "/nosuch does not exist"));
  // A backend that cannot: the verb ends with the reason instead of waiting out its timeout.
  auto memory = cluster_.kubectlBanlieue(
      "vm snapshot vm4 --memory --snapshot-name with-memory --timeout 60 -n " + ns_->name(), 90s);
  EXPECT_NE(memory.exit_code, 0);
  EXPECT_THAT(memory.output, HasSubstr("NotSupportedByBackend"));
  auto deleted =
      cluster_.kubectl("delete bvmsnap by-verb with-memory -n " + ns_->name() + " --timeout=60s");
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
}

// A revert leaves the machine as its snapshot had it; the restore then wakes the machine, whose
// next pass calls the plugin even though its last reply said it was settled and its inputs
// have not changed (docs/adr/0054), so it returns to its spec. Here: snapshot taken running,
// machine powered off since, restored: the file backend writes it stopped again.
TEST_F(SnapshotTest, ARestoredMachineReturnsToItsSpecThoughItWasSettled) {
  placedVm("vm5");
  const fs::path vm_file = backend_dir_ / (ns_->name() + "_vm5.json");
  snapshot("while-running", "vm5");
  ASSERT_TRUE(waitFor("virtualmachinesnapshot/while-running", "condition=Ready")) << diagnostics();
  auto patched =
      cluster_.kubectl("patch filemachine vm5 -n " + ns_->name() +
                       R"( --type=merge -p '{"spec":{"desiredPowerState":"PoweredOff"}}')");
  ASSERT_EQ(patched.exit_code, 0) << patched.output;
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("filemachine vm5", "{.status.observedPowerState}") == "PoweredOff";
  })) << diagnostics();
  ASSERT_THAT(readFile(vm_file), HasSubstr("\"stopped\""));

  restore("back", "vm5", "while-running");
  ASSERT_TRUE(waitFor("virtualmachinerestore/back", "condition=Complete")) << diagnostics();
  EXPECT_EQ(reason("virtualmachinerestore back", "Complete"), "Restored");
  EXPECT_EQ(countLines(journal(), "reverted "), 1) << journal();
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return readFile(vm_file).find("\"stopped\"") != std::string::npos;
  })) << "the reverted machine kept the snapshot's power state: "
      << readFile(vm_file) << diagnostics();
}

TEST_F(SnapshotTest, WhatCannotBeDoneSaysWhy) {
  placedVm("vm2");
  // The file backend keeps no memory: the plugin's reason, not a retry loop.
  snapshot("with-memory", "vm2", true);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return reason("virtualmachinesnapshot with-memory", "Ready") == "NotSupportedByBackend";
  })) << diagnostics();
  // A restore names a snapshot that is not there, or one of another VM.
  restore("nothing", "vm2", "no-such-snapshot");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return reason("virtualmachinerestore nothing", "Complete") == "SnapshotNotFound";
  })) << diagnostics();
  snapshot("of-vm2", "vm2");
  ASSERT_TRUE(waitFor("virtualmachinesnapshot/of-vm2", "condition=Ready")) << diagnostics();
  restore("crossed", "vm3", "of-vm2");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return reason("virtualmachinerestore crossed", "Complete") == "SnapshotOfAnotherMachine";
  })) << diagnostics();
  EXPECT_EQ(countLines(journal(), "reverted "), 0) << journal();
  // A snapshot whose machine is gone is removed without a backend call.
  auto deleted = cluster_.kubectl("delete filemachine vm2 -n " + ns_->name() + " --timeout=60s");
  EXPECT_EQ(deleted.exit_code, 0) << deleted.output;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return reason("virtualmachinesnapshot of-vm2", "Ready") == "MachineGone";
  })) << diagnostics();
  auto gone = cluster_.kubectl("delete virtualmachinesnapshot of-vm2 with-memory -n " +
                               ns_->name() + " --timeout=60s");
  EXPECT_EQ(gone.exit_code, 0) << gone.output << diagnostics();
}

}  // namespace
}  // namespace banlieue::testing
