// The vSphere plugin through the C ABI against the project's vcsim (TLS with a test CA and a
// required login). After each test vcsim's inventory holds exactly what it held before: no
// leaked VM, folder or datastore file.
#include "plugins/vsphere/src/image_import.h"
#include "plugins/vsphere/src/machine_spec.h"
#include "tests/abi/run_banlieue.h"
#include "tests/support/build_paths.h"
#include "tests/vsphere/plugin_driver.h"
#include "tests/vsphere/vcsim_suite.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace banlieue::vsphere::testing {
namespace {

using ::testing::HasSubstr;
namespace json = sdk::json;

constexpr const char* kCapabilities =
    R"({"storageClasses":[{"name":"fast","target":{"datastore":"LocalDS_0"}},)"
    R"({"name":"missing","target":{"datastore":"NoSuchDS"}}],)"
    R"("networkClasses":[{"name":"vm","target":{"portGroup":"VM Network"}},)"
    R"({"name":"dvpg","target":{"distributedPortGroup":"DC0_DVPG0"}},)"
    R"({"name":"wrong-kind","target":{"portGroup":"DC0_DVPG0"}}],)"
    R"("features":["hotAddCPU"]})";

// The sample spec with top-level fields replaced by those of the JSON object `overrides`.
std::string machineSpec(const std::string& overrides = "{}") {
  auto spec = json::parse(
      R"({"failureDomain":"vcsim-dc0-dc0-c0","template":"DC0_C0_RP0_VM0","datacenter":"DC0",)"
      R"("cluster":"DC0_C0","datastore":"LocalDS_0","numCpus":2,"memoryMiB":2048,)"
      R"("firmware":"efi","disks":[{"name":"os","sizeGiB":20}],)"
      R"("network":[{"name":"eth0","portGroup":"VM Network","ipam":{"static":{"address":"10.0.0.5","prefix":24,"gateway":"10.0.0.1","nameservers":["10.0.0.2"],"domain":"example.test"}}}],)"
      R"("userData":"#cloud-config\nhostname: x\n"})",
      "spec");
  auto changes = json::parse(overrides, "overrides");
  for (auto& m : changes.GetObject()) {
    spec.RemoveMember(m.name.GetString());
    spec.AddMember(rapidjson::Value(m.name, spec.GetAllocator()),
                   rapidjson::Value(m.value, spec.GetAllocator()), spec.GetAllocator());
  }
  return json::serialize(spec);
}

std::string extraConfig(const ObjectContent& vm, const std::string& key) {
  std::string value;
  for (pugi::xml_node option : children(vm.node("config.extraConfig"), "OptionValue")) {
    if (childText(option, "key").value_or("") == key)
      value = childText(option, "value").value_or("");
  }
  return value;
}

class VsphereTest : public VcsimSuite {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(*vcsim_);
    vms_before_ = backend_->vmNames();
    folders_before_ = backend_->folderNames();
    files_before_ = backend_->datastoreFiles();
    ASSERT_TRUE(
        driver_.create(vcsim_->instanceConfig("vcsim", Vcsim::kPassword, "", false, kCapabilities))
            .ok());
  }

  void TearDown() override {
    driver_.destroy();
    if (::testing::Test::HasFatalFailure()) return;
    Backend after(*vcsim_);
    EXPECT_EQ(after.vmNames(), vms_before_) << "a VM or template leaked";
    EXPECT_EQ(after.folderNames(), folders_before_) << "a folder leaked";
    EXPECT_EQ(after.datastoreFiles(), files_before_) << "a datastore file leaked";
  }

  PluginDriver driver_;
  std::unique_ptr<Backend> backend_;
  std::set<std::string> vms_before_, folders_before_, files_before_;
};

TEST_F(VsphereTest, IntrospectReportsOneFailureDomainPerClusterWithReachableClasses) {
  auto outcome =
      driver_.introspect(R"({"provider":{"metadata":{"name":"vcsim"},"spec":{"capabilities":)" +
                         std::string(kCapabilities) + "}}}");
  ASSERT_TRUE(outcome.ok()) << outcome.reason << ": " << outcome.message;
  auto body = json::parse(outcome.body, "introspect");
  const auto& fds = body["failureDomains"];
  ASSERT_EQ(fds.Size(), 1u);
  EXPECT_EQ(json::stringOr(&fds[0], "name"), "vcsim-dc0-dc0-c0");
  EXPECT_EQ(json::stringOr(&fds[0], "labels.datacenter"), "DC0");
  EXPECT_EQ(json::stringOr(&fds[0], "labels.cluster"), "DC0_C0");
  EXPECT_EQ(json::serialize(fds[0]["attributes"]["availableStorageClasses"]), R"(["fast"])");
  EXPECT_EQ(json::serialize(fds[0]["attributes"]["availableNetworkClasses"]), R"(["vm","dvpg"])");
  EXPECT_EQ(json::serialize(fds[0]["attributes"]["features"]), R"(["hotAddCPU"])");
}

TEST_F(VsphereTest, NameOverridesRenameFailureDomains) {
  auto outcome = driver_.introspect(
      R"({"provider":{"metadata":{"name":"vcsim"},"spec":{"failureDomainNameOverrides":[)"
      R"({"datacenter":"DC0","cluster":"DC0_C0","name":"Zone A"}]}}})");
  ASSERT_TRUE(outcome.ok()) << outcome.message;
  EXPECT_THAT(outcome.body, HasSubstr(R"("name":"zone-a")"));
}

TEST_F(VsphereTest, WrongPasswordIsUnauthenticatedInvalidLogin) {
  PluginDriver other;
  auto outcome = other.create(vcsim_->instanceConfig("vcsim", "wrong-password"));
  EXPECT_EQ(outcome.code, BANLIEUE_UNAUTHENTICATED);
  EXPECT_EQ(outcome.reason, "InvalidLogin");
  EXPECT_THAT(outcome.message, ::testing::Not(HasSubstr("wrong-password")));
  EXPECT_FALSE(other.hasInstance());
}

TEST_F(VsphereTest, UntrustedCertificateFailsTheHandshake) {
  PluginDriver other;
  auto outcome =
      other.create(vcsim_->instanceConfig("vcsim", Vcsim::kPassword, vcsim_->otherCaPem()));
  EXPECT_EQ(outcome.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(outcome.reason, "ConnectFailed");
  EXPECT_THAT(outcome.message, HasSubstr("TLS handshake"));
  // insecureSkipTLSVerify connects, with a warning in the log.
  auto insecure = other.create(vcsim_->instanceConfig("vcsim", Vcsim::kPassword, "", true));
  EXPECT_TRUE(insecure.ok()) << insecure.message;
  bool warned = false;
  for (const auto& line : other.host().logs()) {
    warned = warned || line.message.find("insecureSkipTLSVerify") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

TEST_F(VsphereTest, MachineLifecycleCreatePowerReconfigureDelete) {
  const std::string uid = "1a2b3c4d-0000-4000-8000-000000000001";
  const std::string name = "vm-1a2b3c4d";
  auto created = driver_.drive("reconcile", "VSphereMachine", uid,
                               objectJson(uid, machineSpec(R"({"folder":"banlieue-test/vms"})")));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  auto status = json::parse(created.body, "reply");
  EXPECT_EQ(json::stringOr(&status, "status.providerID"), "vsphere://" + uid);
  EXPECT_EQ(json::stringOr(&status, "status.observedPowerState"), "PoweredOn");
  EXPECT_TRUE(json::boolean(&status, "status.initialization.provisioned"));
  auto vm = backend_->vm(name, {"config.hardware.numCPU", "config.hardware.memoryMB",
                                "runtime.powerState", "config.extraConfig", "config.instanceUuid"});
  ASSERT_TRUE(vm.has_value());
  EXPECT_EQ(vm->integer("config.hardware.numCPU"), 2);
  EXPECT_EQ(vm->integer("config.hardware.memoryMB"), 2048);
  EXPECT_EQ(vm->text("runtime.powerState"), "poweredOn");
  EXPECT_EQ(vm->text("config.instanceUuid"), uid);
  EXPECT_EQ(extraConfig(*vm, "guestinfo.network.ip"), "10.0.0.5");
  EXPECT_EQ(extraConfig(*vm, "guestinfo.userdata"), base64("#cloud-config\nhostname: x\n"));
  EXPECT_EQ(extraConfig(*vm, "guestinfo.metadata"),
            base64("instance-id: " + name + "\nlocal-hostname: " + name + ".example.test\n"));

  // A retry after a lost status write finds the VM by instance UUID instead of cloning again.
  auto again = driver_.drive("reconcile", "VSphereMachine", uid,
                             objectJson(uid, machineSpec(R"({"folder":"banlieue-test/vms"})")));
  ASSERT_TRUE(again.ok()) << again.message;
  auto names = backend_->vmNames();
  EXPECT_EQ(names.size(), vms_before_.size() + 1);

  // Power off.
  auto off = driver_.drive(
      "reconcile", "VSphereMachine", uid,
      objectJson(
          uid, machineSpec(R"({"folder":"banlieue-test/vms","desiredPowerState":"PoweredOff"})")));
  ASSERT_TRUE(off.ok()) << off.message;
  EXPECT_EQ(backend_->vm(name, {"runtime.powerState"})->text("runtime.powerState"), "poweredOff");

  // Resize while on: the plugin powers off, reconfigures and powers on again.
  ASSERT_TRUE(driver_
                  .drive("reconcile", "VSphereMachine", uid,
                         objectJson(uid, machineSpec(R"({"folder":"banlieue-test/vms"})")))
                  .ok());
  auto resized = driver_.drive(
      "reconcile", "VSphereMachine", uid,
      objectJson(uid,
                 machineSpec(R"({"folder":"banlieue-test/vms","numCpus":4,"memoryMiB":4096})")));
  ASSERT_TRUE(resized.ok()) << resized.message;
  vm = backend_->vm(name,
                    {"config.hardware.numCPU", "config.hardware.memoryMB", "runtime.powerState"});
  EXPECT_EQ(vm->integer("config.hardware.numCPU"), 4);
  EXPECT_EQ(vm->integer("config.hardware.memoryMB"), 4096);
  EXPECT_EQ(vm->text("runtime.powerState"), "poweredOn");

  // NICs and disks: re-back the first NIC onto a distributed port group, add a second NIC,
  // grow the OS disk and add a data disk, all while the VM runs.
  auto devices = driver_.drive(
      "reconcile", "VSphereMachine", uid,
      objectJson(uid, machineSpec(
                          R"({"folder":"banlieue-test/vms","numCpus":4,"memoryMiB":4096,)"
                          R"("network":[{"portGroup":"DC0_DVPG0"},{"portGroup":"VM Network"}],)"
                          R"("disks":[{"name":"os","sizeGiB":30},{"name":"data","sizeGiB":5}]})")));
  ASSERT_TRUE(devices.ok()) << devices.reason << ": " << devices.message;
  vm = backend_->vm(name, {"config.hardware.device", "runtime.powerState"});
  std::vector<std::string> nics;
  std::vector<int64_t> disks_kb;
  for (pugi::xml_node device : children(vm->node("config.hardware.device"), "VirtualDevice")) {
    pugi::xml_node backing = child(device, "backing");
    if (xsiType(device) == "VirtualDisk") {
      disks_kb.push_back(std::stoll(childText(device, "capacityInKB").value_or("0")));
    } else if (child(device, "macAddress")) {
      nics.push_back(child(backing, "port")
                         ? childText(child(backing, "port"), "portgroupKey").value_or("")
                         : childText(backing, "deviceName").value_or(""));
    }
  }
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_THAT(nics[0], HasSubstr("dvportgroup"));
  EXPECT_EQ(nics[1], "VM Network");
  EXPECT_EQ(disks_kb, (std::vector<int64_t>{30ll * 1024 * 1024, 5ll * 1024 * 1024}));
  EXPECT_EQ(vm->text("runtime.powerState"), "poweredOn");
  // Steady state: nothing to change, no task started.
  auto steady = driver_.once(
      "reconcile", "VSphereMachine", uid,
      objectJson(uid, machineSpec(
                          R"({"folder":"banlieue-test/vms","numCpus":4,"memoryMiB":4096,)"
                          R"("network":[{"portGroup":"DC0_DVPG0"},{"portGroup":"VM Network"}],)"
                          R"("disks":[{"name":"os","sizeGiB":30},{"name":"data","sizeGiB":5}]})")));
  EXPECT_TRUE(steady.ok()) << steady.reason << ": " << steady.message;

  // Delete: power off, destroy, confirm gone; a second finalize is a no-op.
  auto deleted = driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec()));
  ASSERT_TRUE(deleted.ok()) << deleted.message;
  EXPECT_FALSE(backend_->vm(name, {}).has_value());
  EXPECT_TRUE(
      driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec())).ok());

  // The folder the clone created is shared by every VM placed there; the test removes it.
  backend_->runTask("Destroy_Task", backend_->find("DC0/vm/banlieue-test"));
}

TEST_F(VsphereTest, MissingTemplateAndUnknownDatastoreGiveSpecificReasons) {
  const std::string uid = "1a2b3c4d-0000-4000-8000-000000000002";
  auto no_template =
      driver_.drive("reconcile", "VSphereMachine", uid,
                    objectJson(uid, machineSpec(R"({"template":"no-such-template"})")));
  EXPECT_EQ(no_template.code, BANLIEUE_NOT_FOUND);
  EXPECT_EQ(no_template.reason, "TemplateNotFound");
  auto no_datastore = driver_.drive("reconcile", "VSphereMachine", uid,
                                    objectJson(uid, machineSpec(R"({"datastore":"NoSuchDS"})")));
  EXPECT_EQ(no_datastore.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(no_datastore.reason, "DatastoreNotFound");
  auto bad_network = driver_.drive(
      "reconcile", "VSphereMachine", uid,
      objectJson(
          uid,
          R"({"template":"DC0_C0_RP0_VM0","datacenter":"DC0","cluster":"DC0_C0","datastore":"LocalDS_0","numCpus":1,"memoryMiB":512,"network":[{"portGroup":"nope"}]})"));
  EXPECT_EQ(bad_network.reason, "NetworkNotFound");
  auto invalid = driver_.once("reconcile", "VSphereMachine", uid,
                              objectJson(uid, R"({"template":"t","numCpus":0})"));
  EXPECT_EQ(invalid.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(invalid.reason, "InvalidSpec");
}

TEST_F(VsphereTest, ImportRejectsWrongArtifactsAndUnknownZones) {
  const std::string uid = "9a9b9c9d-0000-4000-8000-000000000002";
  auto raw = driver_.once(
      "import_image", "", uid,
      R"({"image":{"metadata":{"name":"i"}},"artifact":{"path":"/nonexistent","format":"raw","sha256":"00"},"failureDomain":"vcsim-dc0-dc0-c0"})");
  EXPECT_EQ(raw.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(raw.reason, "WrongArtifactKind");
  auto zone = driver_.once(
      "import_image", "", uid,
      R"({"image":{"metadata":{"name":"i"}},"artifact":{"path":"/nonexistent","format":"iso","sha256":"00"},"failureDomain":"nowhere"})");
  EXPECT_EQ(zone.code, BANLIEUE_NOT_FOUND);
  EXPECT_EQ(zone.reason, "FailureDomainNotFound");
  auto missing = driver_.once(
      "import_image", "", uid,
      R"({"image":{"metadata":{"name":"i"}},"artifact":{"path":"/nonexistent","format":"iso","sha256":"00"},"failureDomain":"vcsim-dc0-dc0-c0"})");
  EXPECT_EQ(missing.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(missing.reason, "ArtifactMissing");
}

TEST_F(VsphereTest, CancelledCallStartsNoTask) {
  const std::string uid = "1a2b3c4d-0000-4000-8000-000000000004";
  driver_.host().cancelAll(true);
  auto outcome = driver_.once("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec()));
  driver_.host().cancelAll(false);
  EXPECT_EQ(outcome.code, BANLIEUE_CANCELLED);
  EXPECT_EQ(backend_->vmNames(), vms_before_);
}

TEST_F(VsphereTest, VmDestroyedUnderOurFeetIsReportedNotRecreated) {
  const std::string uid = "1a2b3c4d-0000-4000-8000-000000000003";
  auto created = driver_.drive("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec()));
  ASSERT_TRUE(created.ok()) << created.message;
  auto status = json::parse(created.body, "reply");
  std::string status_json = json::serialize(status["status"]);

  MoRef vm{"VirtualMachine", json::stringOr(&status, "status.vmRef")};
  backend_->runTask("PowerOffVM_Task", vm);
  backend_->runTask("Destroy_Task", vm);

  auto missing = driver_.drive("reconcile", "VSphereMachine", uid,
                               objectJson(uid, machineSpec(), status_json));
  EXPECT_EQ(missing.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(missing.reason, "BackendMissing");
  EXPECT_THAT(missing.message, HasSubstr(vm.value));
  EXPECT_EQ(backend_->vmNames(), vms_before_);  // not recreated
  EXPECT_TRUE(
      driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec())).ok());
}

TEST_F(VsphereTest, RecoversWhenVcsimRestarts) {
  ASSERT_TRUE(driver_.introspect("{}").ok());
  vcsim_->restart();
  backend_ = std::make_unique<Backend>(*vcsim_);
  auto outcome = driver_.introspect("{}");  // stale connection and session: re-login once
  EXPECT_TRUE(outcome.ok()) << outcome.reason << ": " << outcome.message;
  vcsim_->stop();
  auto down = driver_.introspect("{}");
  EXPECT_EQ(down.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(down.reason, "ConnectFailed");
  vcsim_->start();
  EXPECT_TRUE(driver_.introspect("{}").ok());
  // The restarted simulator has a fresh inventory: compare against it.
  backend_ = std::make_unique<Backend>(*vcsim_);
  vms_before_ = backend_->vmNames();
  folders_before_ = backend_->folderNames();
  files_before_ = backend_->datastoreFiles();
}

TEST_F(VsphereTest, TemplateImportFromIsoPerZone) {
  char path[] = "/tmp/banlieue-iso-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << std::string(256 * 1024, 'x');
  const std::string sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  const std::string request =
      R"({"image":{"metadata":{"name":"kairos-1"},"spec":{"osFamily":"linux","template":{"rootFolder":"banlieue-templates","cpus":2,"memoryMib":2048,"disk":{"size":16},"network":[{"network":"DC0_DVPG0"},{"network":"VM Network"}],"installTimeoutSeconds":600}}},)"
      R"("artifact":{"path":")" +
      std::string(path) + R"(","format":"iso","sha256":")" + sha +
      R"(","sizeBytes":262144},"failureDomain":"vcsim-dc0-dc0-c0"})";
  const std::string uid = "9a9b9c9d-0000-4000-8000-000000000001";

  auto installing = driver_.drive("import_image", "", uid, request);
  ASSERT_EQ(installing.code, BANLIEUE_IN_PROGRESS)
      << installing.reason << ": " << installing.message;
  EXPECT_EQ(installing.reason, "Installing");
  MoRef vm = backend_->find("DC0/vm/banlieue-templates/vcsim-dc0-dc0-c0/kairos-1");
  ASSERT_FALSE(vm.empty());
  auto live = backend_->vm("kairos-1", {"runtime.powerState", "config.hardware.device"});
  EXPECT_EQ(live->text("runtime.powerState"), "poweredOn");
  EXPECT_TRUE(backend_->datastoreFiles().count(isoDatastorePath("kairos-1", sha)) == 1);

  // The installer powers the VM off when it is done.
  backend_->runTask("PowerOffVM_Task", vm);
  auto done = driver_.drive("import_image", "", uid, request);
  ASSERT_TRUE(done.ok()) << done.reason << ": " << done.message;
  auto row = json::parse(done.body, "reply");
  EXPECT_TRUE(json::boolean(&row, "status.ready"));
  EXPECT_EQ(json::stringOr(&row, "status.resolvedRef"), "kairos-1");
  EXPECT_EQ(json::stringOr(&row, "status.templateFolder"), "banlieue-templates/vcsim-dc0-dc0-c0");
  live = backend_->vm("kairos-1", {"config.template", "config.hardware.device"});
  EXPECT_TRUE(live->boolean("config.template"));
  std::vector<std::string> nics;
  for (pugi::xml_node device : children(live->node("config.hardware.device"), "VirtualDevice")) {
    EXPECT_NE(xsiType(device), "VirtualCdrom") << "the CD-ROM must be removed";
    if (xsiType(device) == "VirtualVmxnet3") {
      pugi::xml_node backing = child(device, "backing");
      nics.push_back(child(backing, "port")
                         ? childText(child(backing, "port"), "portgroupKey").value_or("")
                         : childText(backing, "deviceName").value_or(""));
    }
  }
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_THAT(nics[0], HasSubstr("dvportgroup"));
  EXPECT_EQ(nics[1], "VM Network");
  // Idempotent: a second import reports the ready row without touching anything.
  EXPECT_TRUE(driver_.drive("import_image", "", uid, request).ok());

  // Re-importing after the template was deleted reuses the ISO already on the datastore (same
  // checksum, same size): the file is not written again.
  auto iso_file = [&]() {
    auto ds = backend_->vim().retrieveFromContainer(
        backend_->vim().client().content(backend_->deadline()).root_folder,
        {{"Datastore", {"summary.url"}}}, backend_->deadline());
    return std::filesystem::path(ds.objects.front().text("summary.url")) /
           isoDatastorePath("kairos-1", sha);
  };
  const auto written = std::filesystem::last_write_time(iso_file());
  backend_->runTask("Destroy_Task", vm);
  auto reinstalling = driver_.drive("import_image", "", uid, request);
  ASSERT_EQ(reinstalling.reason, "Installing") << reinstalling.message;
  EXPECT_EQ(std::filesystem::last_write_time(iso_file()), written);
  vm = backend_->find("DC0/vm/banlieue-templates/vcsim-dc0-dc0-c0/kairos-1");
  backend_->runTask("PowerOffVM_Task", vm);
  ASSERT_TRUE(driver_.drive("import_image", "", uid, request).ok());

  // delete_image (issue #20, ADR 0037) removes the ISO the import uploaded, then destroys the
  // template, each through a task it polls by token; once both are gone, asking again is OK and
  // touches nothing.
  ASSERT_TRUE(std::filesystem::exists(iso_file()));
  const std::string remove_request =
      R"({"image":{"metadata":{"name":"kairos-1"},"spec":{"template":{"rootFolder":"banlieue-templates"}}},"failureDomain":"vcsim-dc0-dc0-c0","resolvedRef":"kairos-1"})";
  auto removed = driver_.drive("delete_image", "", uid, remove_request);
  ASSERT_TRUE(removed.ok()) << removed.reason << ": " << removed.message;
  EXPECT_TRUE(backend_->find("DC0/vm/banlieue-templates/vcsim-dc0-dc0-c0/kairos-1").empty());
  EXPECT_FALSE(std::filesystem::exists(iso_file())) << "the uploaded ISO is left on the datastore";
  auto again = driver_.drive("delete_image", "", uid, remove_request);
  EXPECT_TRUE(again.ok()) << again.reason << ": " << again.message;

  // Clean up what the import legitimately leaves behind: its directory, folders.
  XmlWriter del;
  del.text("name", "[LocalDS_0] banlieue-images").moref("datacenter", backend_->find("DC0"));
  backend_->runTask("DeleteDatastoreFile_Task",
                    backend_->vim().client().content(backend_->deadline()).file_manager, del.str());
  backend_->runTask("Destroy_Task", backend_->find("DC0/vm/banlieue-templates"));
  std::remove(path);
}

}  // namespace
}  // namespace banlieue::vsphere::testing

namespace banlieue::vsphere::testing {
namespace {

// `banlieue plugin check` (the conformance entry point third parties use) on the real plugin
// directory, connected to vcsim: every slot, including reconcile/finalize of the sample
// VSphereMachine, its snapshots (ABI 1.2) and a stale operation token.
TEST_F(VsphereTest, PluginCheckPassesAgainstVcsim) {
  char path[] = "/tmp/banlieue-vsphere-config-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << vcsim_->instanceConfig("vcsim", Vcsim::kPassword, "", false,
                                                kCapabilities);
  const auto run = banlieue::testing::runBanlieue(
      std::string("plugin check ") + BANLIEUE_VSPHERE_PLUGIN_DIR + " --config " + path);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // The snapshot step ran on the machine the reconcile step made (create, create again, list,
  // revert, delete twice), not merely "not offered".
  EXPECT_THAT(run.output, HasSubstr("PASS  snapshot VSphereMachine")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("deleted twice")) << run.output;
  // The console step found no serial stream and took the webmks ticket; it shows no ticket.
  EXPECT_THAT(run.output, HasSubstr("PASS  console VSphereMachine")) << run.output;
  EXPECT_THAT(run.output, HasSubstr("webmks: a wss:// ticket URL valid 30 s")) << run.output;
  EXPECT_THAT(run.output, Not(HasSubstr("/ticket/"))) << run.output;
  std::remove(path);
  // The sample's clone folder stays (folders are shared); remove it for the leak check.
  MoRef folder = backend_->find("DC0/vm/banlieue-plugin-check");
  ASSERT_FALSE(folder.empty());
  backend_->runTask("Destroy_Task", folder);
}

}  // namespace
}  // namespace banlieue::vsphere::testing
