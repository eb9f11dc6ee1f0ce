// The libvirt plugin driven through the C ABI against libvirt's test driver: test:///default
// (state shared within this process, so the test inspects it over its own connection) and a
// custom node XML (fresh state per connection). Label: integration;libvirt.
#include "plugins/libvirt/test/test_driver_fixture.h"

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace banlieue::libvirt::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(LibvirtPluginTest, DescribeServesLibvirtMachine) {
  auto call = harness_.host().call();
  auto d = harness_.client().describe(call);
  ASSERT_TRUE(d.ok()) << describeOutcome(d);
  auto doc = json::parse(d.body, "describe");
  EXPECT_EQ(json::stringOr(&doc, "name"), "libvirt");
  EXPECT_EQ(json::stringOr(&doc, "kinds.0.kind", "x"), "x");  // arrays are not dotted paths
  EXPECT_EQ(doc["kinds"][0]["kind"].GetString(), std::string("LibvirtMachine"));
  EXPECT_TRUE(json::boolean(&doc, "operations.introspect"));
  EXPECT_TRUE(json::boolean(&doc, "operations.importImage"));
}

TEST_F(LibvirtPluginTest, LifecycleCreatesOneDomainPowersItAndDeletesEverything) {
  int before = inspector_.domainCount();
  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  auto doc = json::parse(r.body, "reply");
  EXPECT_EQ(json::stringOr(&doc, "status.providerID"), "libvirt://" + opts_.uid);
  EXPECT_EQ(json::stringOr(&doc, "status.domainUuid"), opts_.uid);
  EXPECT_EQ(json::stringOr(&doc, "status.observedPowerState"), "PoweredOn");
  EXPECT_TRUE(json::boolean(&doc, "status.initialization.provisioned"));
  EXPECT_FALSE(json::stringOr(&doc, "status.failureDomain").empty());
  ASSERT_TRUE(doc["status"]["addresses"].IsArray());
  ASSERT_FALSE(doc["status"]["addresses"].Empty());  // the test driver's fixed address
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_RUNNING);
  std::string xml = inspector_.domainXml(domain());
  EXPECT_NE(xml.find("<source pool='default-pool' volume='" + domain() + "-root.qcow2'/>"),
            std::string::npos)
      << xml;
  // The root volume is an overlay with a declared backing format.
  std::string vol = inspector_.volumeXml(domain() + "-root.qcow2");
  EXPECT_NE(vol.find("<backingStore>"), std::string::npos) << vol;
  EXPECT_NE(vol.find("<capacity unit='bytes'>4294967296</capacity>"), std::string::npos) << vol;

  // A retried create (same object, lost status) converges on the same domain.
  auto again = harness_.reconcile(opts_);
  ASSERT_TRUE(again.ok()) << describeOutcome(again);
  EXPECT_EQ(inspector_.domainCount(), before + 1);

  opts_.power = "PoweredOff";
  auto off = harness_.reconcile(opts_);
  ASSERT_TRUE(off.code == BANLIEUE_OK || off.code == BANLIEUE_IN_PROGRESS) << describeOutcome(off);
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_SHUTOFF);
  auto off_doc = json::parse(harness_.reconcile(opts_).body, "reply");
  EXPECT_EQ(json::stringOr(&off_doc, "status.observedPowerState"), "PoweredOff");

  opts_.power = "Suspended";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_PAUSED);

  opts_.power = "PoweredOn";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_RUNNING);

  auto fin = harness_.finalize(opts_);
  ASSERT_TRUE(fin.ok()) << describeOutcome(fin);
  EXPECT_FALSE(inspector_.hasDomain(domain()));
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-root.qcow2"));
  EXPECT_TRUE(inspector_.hasVolume(base_));  // the image is not the machine's to delete
  EXPECT_EQ(inspector_.domainCount(), before);
  auto fin2 = harness_.finalize(opts_);
  EXPECT_TRUE(fin2.ok()) << describeOutcome(fin2);
}

TEST_F(LibvirtPluginTest, DataDisksAreCreatedAndDeleted) {
  opts_.extra_disks = R"(,{"name":"data","sizeGiB":1,"bus":"scsi"})";
  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_TRUE(inspector_.hasVolume(domain() + "-disk-data.qcow2"));
  EXPECT_NE(inspector_.domainXml(domain()).find("bus='scsi'"), std::string::npos);
  // Dropping the disk from the spec does not orphan it: finalize reads the domain's disks.
  opts_.extra_disks.clear();
  ASSERT_TRUE(harness_.finalize(opts_).ok());
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-disk-data.qcow2"));
}

TEST_F(LibvirtPluginTest, UnknownPoolIsAFailedPreconditionNamingThePool) {
  opts_.pool = "no-such-pool";
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "PoolNotFound");
  EXPECT_NE(r.message.find("no-such-pool"), std::string::npos);
  EXPECT_FALSE(inspector_.hasDomain(domain()));
  EXPECT_TRUE(harness_.finalize(opts_).ok());  // nothing to delete, and that is fine
}

TEST_F(LibvirtPluginTest, InactiveNetworkIsRefusedBeforeAnythingIsCreated) {
  std::string net = "off-" + std::to_string(::getpid());
  std::string xml = "<network><name>" + net + "</name><bridge name='virbr9'/></network>";
  virNetworkPtr n = virNetworkDefineXML(inspector_.get(), xml.c_str());
  ASSERT_NE(n, nullptr) << virGetLastErrorMessage();
  opts_.network = R"([{"source":{"kind":"network","name":")" + net + R"("}}])";
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "NetworkInactive");
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-root.qcow2"));
  opts_.network = R"([{"source":{"kind":"network","name":"nope"}}])";
  EXPECT_EQ(harness_.reconcile(opts_).reason, "NetworkNotFound");
  virNetworkUndefine(n);
  virNetworkFree(n);
}

TEST_F(LibvirtPluginTest, NameCollisionWithAForeignDomainIsAlreadyExistsAndLeavesItAlone) {
  std::string xml = "<domain type='test'><name>" + domain() +
                    "</name><uuid>99999999-9999-4999-8999-999999999999</uuid><memory>65536</memory>"
                    "<vcpu>1</vcpu><os><type>hvm</type></os></domain>";
  virDomainPtr foreign = virDomainDefineXML(inspector_.get(), xml.c_str());
  ASSERT_NE(foreign, nullptr) << virGetLastErrorMessage();
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_ALREADY_EXISTS) << describeOutcome(r);
  EXPECT_EQ(r.reason, "DomainNameConflict");
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-root.qcow2"));
  EXPECT_TRUE(harness_.finalize(opts_).ok());
  EXPECT_TRUE(inspector_.hasDomain(domain()));  // not ours: finalize never touches it
  virDomainUndefine(foreign);
  virDomainFree(foreign);
}

TEST_F(LibvirtPluginTest, RootDiskSmallerThanTheImageIsRefused) {
  opts_.root_gib = 1;  // the image is 2 GiB
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(r);
  EXPECT_EQ(r.reason, "DiskShrink");
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-root.qcow2"));
}

TEST_F(LibvirtPluginTest, ShrinkingAnExistingDiskIsRefusedAndKeepsTheData) {
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  opts_.root_gib = 3;
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "DiskShrinkUnsupported");
  EXPECT_NE(inspector_.volumeXml(domain() + "-root.qcow2").find("4294967296"), std::string::npos);
}

TEST_F(LibvirtPluginTest, AVanishedRootVolumeIsReportedNotRecreatedEmpty) {
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  inspector_.deleteVolume(domain() + "-root.qcow2");
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "RootVolumeMissing");
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-root.qcow2"));
}

TEST_F(LibvirtPluginTest, MissingImageIsReported) {
  opts_.boot_volume = "nothing-here.qcow2";
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "ImageNotFound");
}

TEST_F(LibvirtPluginTest, SeedIsoNeedsUploadsWhichTheTestDriverLacksAndNothingLeaks) {
  opts_.user_data = "#cloud-config\nhostname: web\n";
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "UploadUnsupported");
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-cidata.iso"));
  EXPECT_FALSE(inspector_.hasVolume(domain() + "-root.qcow2"));
  EXPECT_FALSE(inspector_.hasDomain(domain()));
}

TEST_F(LibvirtPluginTest, GracefulShutdownTimesOutIntoDestroyWithAnOperationToken) {
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  // A token from a shutdown that started long ago: the timeout has passed, so the plugin
  // destroys the domain instead of waiting again.
  opts_.power = "PoweredOff";
  auto r = harness_.reconcile(opts_, "shutdown:1");
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  EXPECT_EQ(inspector_.domainState(domain()), VIR_DOMAIN_SHUTOFF);
  // A token the plugin does not know is treated as absent.
  opts_.power = "PoweredOn";
  auto on = harness_.reconcile(opts_, "garbage-token");
  EXPECT_TRUE(on.ok()) << describeOutcome(on);
}

TEST_F(LibvirtPluginTest, IntrospectPublishesOneFailureDomainWithUsableClassesOnly) {
  ProviderSpec spec;
  spec.storage_classes =
      R"([{"name":"fast","target":{"pool":"default-pool"}},{"name":"ghost","target":{"pool":"nope"}}])";
  spec.network_classes =
      R"([{"name":"lan","target":{"network":"default"}},{"name":"gone","target":{"network":"nope"}}])";
  auto r = harness_.introspect(spec);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  auto doc = json::parse(r.body, "introspect");
  ASSERT_EQ(doc["failureDomains"].Size(), 1u);
  const auto& fd = doc["failureDomains"][0];
  auto list = [](const rapidjson::Value& v) {
    std::vector<std::string> out;
    for (const auto& s : v.GetArray()) out.emplace_back(s.GetString());
    return out;
  };
  EXPECT_EQ(list(fd["attributes"]["availableStorageClasses"]), std::vector<std::string>{"fast"});
  EXPECT_EQ(list(fd["attributes"]["availableNetworkClasses"]), std::vector<std::string>{"lan"});
  EXPECT_EQ(json::stringOr(&fd, "attributes.raw.unavailable.ghost"), "");  // dotted key, not path
  EXPECT_TRUE(fd["attributes"]["raw"].HasMember("unavailable.ghost"));
  EXPECT_TRUE(fd["attributes"]["raw"].HasMember("unavailable.gone"));
  int warnings = 0;
  for (const auto& e : harness_.host().events()) {
    if (e.reason == "TargetUnavailable") ++warnings;
  }
  EXPECT_EQ(warnings, 2);
}

TEST_F(LibvirtPluginTest, ValidateRejectsShrinkAndImmutableChanges) {
  auto call = harness_.host().call();
  std::string old_obj = machineObject(opts_);
  MachineOptions smaller = opts_;
  smaller.root_gib = 2;
  auto v =
      harness_.client().validate(call, "LibvirtMachine",
                                 R"({"operation":"UPDATE","object":)" + machineObject(smaller) +
                                     R"(,"oldObject":)" + old_obj + "}");
  EXPECT_EQ(v.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(v);
  EXPECT_EQ(v.reason, "DiskShrink");
  MachineOptions moved = opts_;
  moved.pool = "other";
  v = harness_.client().validate(call, "LibvirtMachine",
                                 R"({"operation":"UPDATE","object":)" + machineObject(moved) +
                                     R"(,"oldObject":)" + old_obj + "}");
  EXPECT_EQ(v.reason, "ImmutableField");
  EXPECT_TRUE(
      harness_.client()
          .validate(call, "LibvirtMachine", R"({"operation":"CREATE","object":)" + old_obj + "}")
          .ok());
}

// ---- image import -------------------------------------------------------------------------

class ImportTest : public LibvirtPluginTest {
 protected:
  void SetUp() override {
    LibvirtPluginTest::SetUp();
    dir_ = fs::temp_directory_path() / ("banlieue-lv-import-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    artifact_ = dir_ / "disk.raw";
    std::ofstream(artifact_, std::ios::binary) << std::string(70000, 'z');
  }
  void TearDown() override {
    fs::remove_all(dir_);
    LibvirtPluginTest::TearDown();
  }
  std::string request(const std::string& sha, const std::string& source_checksum = "") {
    std::string sources = source_checksum.empty()
                              ? "[]"
                              : R"([{"providerClass":"libvirt","kind":"Url","ref":"","checksum":)" +
                                    quote(source_checksum) + "}]";
    return R"({"image":{"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{"name":"debian","uid":"img-uid"},
      "spec":{"sources":)" +
           sources + R"(},"status":{"buildArtifact":{"kind":"cloudImage","phase":"Ready"}}},
      "artifact":{"path":)" +
           quote(artifact_.string()) + R"(,"format":"raw","sha256":)" + quote(sha) +
           R"(,"sizeBytes":70000},"failureDomain":"vm")";
  }
  // The digest as the host would have computed it (coreutils, independent of the plugin).
  std::string realSha() const {
    FILE* p = popen(("sha256sum " + artifact_.string()).c_str(), "r");
    char buf[65] = {0};
    size_t n = p != nullptr ? fread(buf, 1, 64, p) : 0;
    if (p != nullptr) pclose(p);
    EXPECT_EQ(n, 64u);
    return buf;
  }
  fs::path dir_;
  fs::path artifact_;
};

TEST_F(ImportTest, BadChecksumFailsClosedAndLeavesNoVolume) {
  std::string wrong(64, 'a');
  auto r = harness_.importUntilDone(request(wrong), "img-uid");
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "ChecksumMismatch");
  EXPECT_FALSE(inspector_.hasVolume("debian-aaaaaaaaaaaa.raw"));
}

TEST_F(ImportTest, UnknownChecksumAlgorithmIsInvalid) {
  auto r = harness_.importImage(request(std::string(64, 'a'), "md5:abc") + "}", "img-uid");
  EXPECT_EQ(r.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(r);
  EXPECT_EQ(r.reason, "UnsupportedChecksum");
}

TEST_F(ImportTest, SourceChecksumMismatchFailsClosedEvenWhenTheArtifactShaMatches) {
  std::string sha = realSha();
  auto r = harness_.importUntilDone(request(sha, "sha512:" + std::string(128, '0')), "img-uid");
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "ChecksumMismatch");
  EXPECT_NE(r.message.find("sha512"), std::string::npos) << r.message;
}

TEST_F(ImportTest, TheTestDriverCannotStreamAndNothingIsLeftBehind) {
  std::string sha = realSha();  // the right digest, so the job reaches the upload
  auto r = harness_.importUntilDone(request(sha), "img-uid");
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "UploadUnsupported");
  EXPECT_FALSE(inspector_.hasVolume("debian-" + sha.substr(0, 12) + ".raw"));
}

TEST_F(ImportTest, UnknownPoolAndNoPoolAreReportedBeforeAnyWork) {
  ProviderSpec spec;
  spec.storage_classes = R"([{"name":"x","target":{"pool":"missing-pool"}}])";
  ASSERT_TRUE(harness_.create(spec).ok());
  auto r = harness_.importImage(request(std::string(64, 'a')) + "}", "img-uid");
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "PoolNotFound");
  spec.storage_classes = "[]";
  ASSERT_TRUE(harness_.create(spec).ok());
  r = harness_.importImage(request(std::string(64, 'a')) + "}", "img-uid");
  EXPECT_EQ(r.reason, "NoPoolDeclared");
  ASSERT_TRUE(harness_.create(ProviderSpec{}).ok());
}

// ---- connections --------------------------------------------------------------------------

TEST(LibvirtConnection, BadEndpointsAndCredentialsFailClearlyAndLeaveNoKeyOnDisk) {
  auto tmp = fs::temp_directory_path() / ("banlieue-lv-tmp-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  setenv("TMPDIR", tmp.c_str(), 1);
  Harness h;
  ProviderSpec spec;
  spec.endpoint = "qemu+tcp://127.0.0.1/system";
  auto r = h.create(spec);
  EXPECT_EQ(r.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(r);
  EXPECT_EQ(r.reason, "InsecureTransport");

  spec.endpoint = "qemu+tls://127.0.0.1/system";
  r = h.create(spec);
  EXPECT_EQ(r.code, BANLIEUE_INVALID_ARGUMENT) << describeOutcome(r);
  EXPECT_EQ(r.reason, "MissingCredentials");

  // A port nothing listens on: UNAVAILABLE at once, and the written key is gone again.
  spec.endpoint = "qemu+tls://127.0.0.1:1/system";
  spec.credentials = R"({"tls.crt":"CERT","tls.key":"SECRET-KEY","ca.crt":"CA"})";
  r = h.create(spec);
  EXPECT_EQ(r.code, BANLIEUE_UNAVAILABLE) << describeOutcome(r);
  EXPECT_EQ(r.reason, "HostUnreachable");
  EXPECT_EQ(r.message.find("SECRET-KEY"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(tmp)) << "credentials left in " << tmp;

  spec.endpoint = "xen:///system";
  EXPECT_EQ(h.create(spec).reason, "InvalidEndpoint");
  unsetenv("TMPDIR");
  fs::remove_all(tmp);
}

// ---- a custom test-driver node ------------------------------------------------------------

constexpr const char* kNode = R"(<node>
  <cpu><mhz>2000</mhz><model>i686</model><active>2</active><nodes>1</nodes><sockets>1</sockets>
    <cores>2</cores><threads>1</threads></cpu>
  <memory>8388608</memory>
  <domain type='test'>
    <name>default-clash</name><uuid>11111111-2222-4333-8444-555555555555</uuid>
    <memory>65536</memory><vcpu>1</vcpu><os><type>hvm</type></os>
  </domain>
  <network><name>lan</name><bridge name='virbr5'/><ip address='192.168.50.1' netmask='255.255.255.0'/></network>
  <pool type='dir'>
    <name>images</name>
    <capacity unit='GiB'>100</capacity><allocation>0</allocation><available unit='GiB'>100</available>
    <target><path>/images</path></target>
    <volume type='file'><name>debian.qcow2</name><capacity unit='GiB'>2</capacity><allocation>0</allocation>
      <target><format type='qcow2'/></target></volume>
  </pool>
</node>)";

class CustomNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("banlieue-lv-node-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "node.xml") << kNode;
    spec_.endpoint = "test://" + (dir_ / "node.xml").string();
    spec_.storage_classes = R"([{"name":"std","target":{"pool":"images"}}])";
    spec_.network_classes = R"([{"name":"lan","target":{"network":"lan"}}])";
    auto r = harness_.create(spec_);
    ASSERT_TRUE(r.ok()) << describeOutcome(r);
    opts_.pool = "images";
    opts_.boot_volume = "debian.qcow2";
    opts_.network = R"([{"source":{"name":"lan"}}])";
  }
  void TearDown() override {
    harness_.destroy();
    fs::remove_all(dir_);
  }
  fs::path dir_;
  ProviderSpec spec_;
  Harness harness_;
  MachineOptions opts_;
};

TEST_F(CustomNodeTest, IntrospectAndFullLifecycle) {
  auto fd = harness_.introspect(spec_);
  ASSERT_TRUE(fd.ok()) << describeOutcome(fd);
  auto doc = json::parse(fd.body, "introspect");
  EXPECT_EQ(doc["failureDomains"][0]["attributes"]["availableStorageClasses"][0].GetString(),
            std::string("std"));

  auto r = harness_.reconcile(opts_);
  ASSERT_TRUE(r.ok()) << describeOutcome(r);
  auto status = json::parse(r.body, "reply");
  EXPECT_EQ(json::stringOr(&status, "status.observedPowerState"), "PoweredOn");
  EXPECT_EQ(json::stringOr(&status, "status.failureDomain"),
            json::stringOr(&doc["failureDomains"][0], "name"));
  opts_.power = "PoweredOff";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  auto off = json::parse(harness_.reconcile(opts_).body, "reply");
  EXPECT_EQ(json::stringOr(&off, "status.observedPowerState"), "PoweredOff");
  ASSERT_TRUE(harness_.finalize(opts_).ok());
  // After delete, a fresh create works again (the domain and its volumes were really gone).
  opts_.power = "PoweredOn";
  ASSERT_TRUE(harness_.reconcile(opts_).ok());
  ASSERT_TRUE(harness_.finalize(opts_).ok());
}

TEST_F(CustomNodeTest, NameCollisionWithADomainInTheNode) {
  opts_.name = "clash";  // default-clash exists in the node XML with another uuid
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_ALREADY_EXISTS) << describeOutcome(r);
  EXPECT_EQ(r.reason, "DomainNameConflict");
  EXPECT_NE(r.message.find("11111111-2222-4333-8444-555555555555"), std::string::npos);
}

TEST_F(CustomNodeTest, UnknownPoolInTheNode) {
  opts_.pool = "default-pool";  // exists in test:///default, not in this node
  auto r = harness_.reconcile(opts_);
  EXPECT_EQ(r.code, BANLIEUE_FAILED_PRECONDITION) << describeOutcome(r);
  EXPECT_EQ(r.reason, "PoolNotFound");
}

// The SDK keeps one host table per process (sdk::host()): a second harness that loaded the
// plugin and is gone must not leave the first one's calls asking a destroyed host whether they
// are cancelled (the Proxmox harness once failed that way under load).
TEST_F(LibvirtPluginTest, ACallIsCancelledThroughTheHarnessHostAfterAnotherHarnessIsGone) {
  {
    Harness other;
    ASSERT_TRUE(other.create(ProviderSpec{}).ok());
  }
  harness_.host().cancelAll(true);
  auto outcome = harness_.reconcile(opts_);
  harness_.host().cancelAll(false);
  EXPECT_EQ(outcome.code, BANLIEUE_CANCELLED) << describeOutcome(outcome);
}

}  // namespace
}  // namespace banlieue::libvirt::testing
