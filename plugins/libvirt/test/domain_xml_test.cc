// Domain and volume XML generated from a LibvirtMachine, and the XML facts read back.
#include "plugins/libvirt/src/domain_xml.h"
#include "plugins/libvirt/src/connection.h"
#include "plugins/libvirt/src/introspection.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

namespace banlieue::libvirt {
namespace {

MachineSpec sampleMachine() {
  auto doc = sdk::json::parse(
      R"({"metadata":{"name":"web","namespace":"prod","uid":"3f0c2a4e-0d7b-4c1e-9a55-6b1e2f3a4b5c"},
         "spec":{"pool":"images","bootSource":{"volume":"debian.qcow2"},"vcpus":4,"memoryMiB":2048,
                 "firmware":"efi-secure","tpmEnabled":true,"machineType":"q35",
                 "disks":[{"name":"root","sizeGiB":10},{"name":"data","sizeGiB":20,"bus":"scsi"}],
                 "network":[{"source":{"name":"default"},"macAddress":"52:54:00:00:00:01"},
                            {"source":{"kind":"bridge","name":"br<0>"},"model":"e1000"}]}})",
      "test");
  return parseMachine(doc);
}

bool has(const std::string& xml, const std::string& needle) {
  return xml.find(needle) != std::string::npos;
}

TEST(DomainXml, CarriesTheSpec) {
  MachineSpec m = sampleMachine();
  DomainPlan plan;
  plan.domain_type = "qemu";
  plan.root_volume = m.rootVolumeName();
  plan.data_volumes = {m.dataVolumeName(m.disks[1])};
  plan.seed_volume = m.seedVolumeName();
  std::string xml = domainXml(m, plan);
  EXPECT_TRUE(has(xml, "<domain type='qemu'>")) << xml;
  EXPECT_TRUE(has(xml, "<name>prod-web</name>"));
  EXPECT_TRUE(has(xml, "<uuid>3f0c2a4e-0d7b-4c1e-9a55-6b1e2f3a4b5c</uuid>"));
  EXPECT_TRUE(has(xml, "<memory unit='MiB'>2048</memory>"));
  EXPECT_TRUE(has(xml, ">4</vcpu>"));
  EXPECT_TRUE(has(xml, "<os firmware='efi'>"));
  EXPECT_TRUE(has(xml, "<loader secure='yes'/>"));
  EXPECT_FALSE(has(xml, "useserial")) << "OVMF writes to the serial port by itself";
  EXPECT_TRUE(has(xml, "<smm state='on'/>"));
  EXPECT_TRUE(has(xml, "machine='q35'"));
  EXPECT_FALSE(has(xml, "host-passthrough"));  // only for kvm
  EXPECT_TRUE(has(xml, "<source pool='images' volume='prod-web-root.qcow2'/>"));
  EXPECT_TRUE(has(xml, "<target dev='vda' bus='virtio'/>"));
  EXPECT_TRUE(has(xml, "<source pool='images' volume='prod-web-disk-data.qcow2'/>"));
  EXPECT_TRUE(has(xml, "<target dev='sda' bus='scsi'/>"));
  EXPECT_TRUE(has(xml, "model='virtio-scsi'"));
  EXPECT_TRUE(has(xml, "<disk type='volume' device='cdrom'>"));
  EXPECT_TRUE(has(xml, "volume='prod-web-cidata.iso'"));
  EXPECT_TRUE(has(xml, "<target dev='sdb' bus='sata'/>"));
  EXPECT_TRUE(has(xml, "<mac address='52:54:00:00:00:01'/>"));
  EXPECT_TRUE(has(xml, "<source network='default'/>"));
  EXPECT_TRUE(has(xml, "<source bridge='br&lt;0&gt;'/>"));
  EXPECT_TRUE(has(xml, "<model type='e1000'/>"));
  EXPECT_TRUE(has(xml, "<tpm model='tpm-crb'>"));
  EXPECT_TRUE(has(xml, "org.qemu.guest_agent.0"));
}

TEST(DomainXml, BiosWithoutTpmAndKvmPassthrough) {
  MachineSpec m = sampleMachine();
  m.firmware = "bios";
  m.tpm = false;
  DomainPlan plan;
  plan.domain_type = "kvm";
  plan.root_volume = m.rootVolumeName();
  plan.install_media_volume = "installer.iso";
  std::string xml = domainXml(m, plan);
  EXPECT_FALSE(has(xml, "firmware="));
  EXPECT_FALSE(has(xml, "<tpm"));
  EXPECT_TRUE(has(xml, "host-passthrough"));
  EXPECT_TRUE(has(xml, "volume='installer.iso'"));
  EXPECT_TRUE(has(xml, "<boot order='2'/>"));
  // The firmware's messages reach the serial console.
  EXPECT_TRUE(has(xml, "<bios useserial='yes'/>"));
}

TEST(DomainXml, VolumeWithDeclaredBackingFormat) {
  std::string xml =
      volumeXml({"root.qcow2", 10737418240ull, "qcow2", "/var/lib/img/base.raw", "raw"});
  EXPECT_TRUE(has(xml, "<capacity unit='bytes'>10737418240</capacity>"));
  EXPECT_TRUE(
      has(xml, "<backingStore>\n    <path>/var/lib/img/base.raw</path>\n    <format type='raw'/>"));
  EXPECT_FALSE(has(volumeXml({"a", 1, "raw", "", ""}), "backingStore"));
}

TEST(DomainXml, ReadsTheVolumeFormatNotTheBackingStores) {
  std::string vol =
      "<volume type='file'>\n<name>a&amp;b</name>\n<target>\n<path>/p</path>\n"
      "<format type='qcow2'/>\n</target>\n<backingStore><format type='raw'/>"
      "</backingStore></volume>";
  EXPECT_EQ(declaredVolumeFormat(vol), "qcow2");
  EXPECT_FALSE(declaredVolumeFormat("<volume><target><path>/p</path></target></volume>"));
  EXPECT_FALSE(declaredVolumeFormat("<volume><target><format type='raw'/>"));  // cut short
}

TEST(DomainXml, ReadsTheDomainsPoolVolumesAndTheHostsOffer) {
  MachineSpec m = sampleMachine();
  DomainPlan plan;
  plan.root_volume = "vm-disk-root";
  plan.data_volumes = {"vm-disk-data"};
  plan.seed_volume = "vm-disk-seed";
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& v : domainPoolVolumes(domainXml(m, plan))) got.emplace_back(v.pool, v.volume);
  EXPECT_EQ(got,
            (std::vector<std::pair<std::string, std::string>>{
                {m.pool, "vm-disk-root"}, {m.pool, "vm-disk-data"}, {m.pool, "vm-disk-seed"}}));

  EXPECT_TRUE(hostCpuVirtualization(
      "<capabilities><host><cpu><arch>x86_64</arch><feature name='svm'/></cpu></host>"
      "</capabilities>"));
  const DomainCapabilities offered = readDomainCapabilities(R"(<domainCapabilities>
    <os supported='yes'><enum name='firmware'><value>bios</value><value>efi</value></enum>
      <loader supported='yes'><enum name='secure'><value>yes</value><value>no</value></enum>
      </loader></os>
    <devices><tpm supported='yes'/></devices></domainCapabilities>)");
  EXPECT_TRUE(offered.tpm);
  EXPECT_TRUE(offered.efi);
  EXPECT_TRUE(offered.secure_boot);
}

// Issue #20: what a resize compares, read back from XML as libvirt writes it.
TEST(DomainXml, ReadsTheHardwareOfADefinitionInAnyMemoryUnit) {
  MachineSpec m = sampleMachine();
  DomainPlan plan;
  plan.domain_type = "qemu";
  plan.root_volume = "vm-disk-root";
  plan.data_volumes = {"vm-disk-data"};
  auto ours = domainHardware(domainXml(m, plan));
  ASSERT_TRUE(ours.has_value());
  EXPECT_EQ(ours->type, "qemu");
  EXPECT_EQ(ours->vcpus, 4);
  EXPECT_EQ(ours->memory_mib, 2048);
  ASSERT_EQ(ours->volumes.size(), 2U);
  EXPECT_EQ(ours->volumes[1].volume, "vm-disk-data");

  // libvirt's own rendering: KiB, a current vCPU count below the maximum.
  auto live = domainHardware(
      "<domain type='kvm'><memory unit='KiB'>1048576</memory>"
      "<vcpu placement='static' current='2'>8</vcpu></domain>");
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(live->vcpus, 2);
  EXPECT_EQ(live->memory_mib, 1024);
  EXPECT_EQ(domainHardware("<domain><memory unit='GiB'>3</memory></domain>")->memory_mib, 3072);
  EXPECT_EQ(domainHardware("<domain><memory>524288</memory></domain>")->memory_mib, 512);
  EXPECT_EQ(domainHardware("<domain><memory unit='parsec'>1</memory></domain>")->memory_mib, 0)
      << "an unknown unit reads as nothing, never as a guess";
  EXPECT_FALSE(domainHardware("<!-- <domain/> -->").has_value());
}

TEST(DomainXml, SerializesOneDiskToAttach) {
  MachineSpec m = sampleMachine();
  DomainPlan plan;
  plan.root_volume = "vm-disk-root";
  plan.data_volumes = {"vm-disk-data"};
  auto disk = diskElementFor(domainXml(m, plan), m.pool, "vm-disk-data");
  ASSERT_TRUE(disk.has_value());
  EXPECT_TRUE(has(*disk, "<disk type=\"volume\" device=\"disk\">")) << *disk;
  EXPECT_TRUE(has(*disk, "volume=\"vm-disk-data\"")) << *disk;
  EXPECT_TRUE(has(*disk, "bus=\"scsi\"")) << *disk;
  EXPECT_FALSE(has(*disk, "vm-disk-root")) << *disk;
  EXPECT_FALSE(diskElementFor(domainXml(m, plan), "other-pool", "vm-disk-data").has_value());
}

TEST(DomainXml, GuestDomainTypesFromCapabilities) {
  std::string caps =
      R"(<capabilities><host><cpu><arch>x86_64</arch><feature name='vmx'/></cpu></host>
    <guest><os_type>hvm</os_type><arch name='i686'><domain type='qemu'/></arch></guest>
    <guest><os_type>hvm</os_type><arch name='x86_64'><wordsize>64</wordsize>
      <domain type='qemu'/><domain type='kvm'/></arch></guest></capabilities>)";
  EXPECT_EQ(guestDomainTypes(caps, "x86_64"), (std::vector<std::string>{"qemu", "kvm"}));
  EXPECT_TRUE(guestDomainTypes(caps, "aarch64").empty());
}

TEST(Uri, CredentialsGoIntoQueryParameters) {
  EXPECT_EQ(connectionUri("qemu+tls://h/system", "/tmp/p", false, false),
            "qemu+tls://h/system?pkipath=/tmp/p");
  EXPECT_EQ(connectionUri("qemu+tls://h/system?pkipath=/own", "/tmp/p", false, true),
            "qemu+tls://h/system?pkipath=/own&no_verify=1");
  EXPECT_EQ(connectionUri("qemu+ssh://root@h/system", "/tmp/p", true, false),
            "qemu+ssh://root@h/system?keyfile=/tmp/p/id_ssh&no_tty=1");
  EXPECT_EQ(connectionUri("qemu:///system", "/tmp/p", false, false), "qemu:///system");
  EXPECT_EQ(connectionUri("test:///default", "", false, false), "test:///default");
  UriParts p = parseUri("qemu+tls://[::1]:16515/system");
  EXPECT_EQ(p.host, "::1");
  EXPECT_EQ(p.port, 16515);
  EXPECT_EQ(parseUri("qemu+ssh://u@kvm1.example.org/system").host, "kvm1.example.org");
  EXPECT_THROW(parseUri("qemu+tcp://h/system"), sdk::Error);
  EXPECT_THROW(parseUri("xen:///system"), sdk::Error);
  EXPECT_THROW(parseUri("nonsense"), sdk::Error);
}

// The snapshot plugin's XML: the name and description escaped; what libvirt says back about
// time and memory, from the memory element or, without one, the state it was taken in.
TEST(DomainXml, SnapshotXmlAndFacts) {
  const std::string xml = snapshotXml("nightly", "before <upgrade> & 'reboot'");
  EXPECT_NE(xml.find("<name>nightly</name>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<description>before &lt;upgrade&gt; &amp; &apos;reboot&apos;</description>"),
            std::string::npos)
      << xml;
  EXPECT_EQ(snapshotXml("n", "").find("description"), std::string::npos);

  auto running = snapshotFacts(
      "<domainsnapshot><name>a</name><state>running</state><creationTime>1764849600"
      "</creationTime><memory snapshot='internal'/></domainsnapshot>");
  ASSERT_TRUE(running);
  EXPECT_EQ(running->creation_time, 1764849600);
  EXPECT_TRUE(running->memory);
  auto off = snapshotFacts(
      "<domainsnapshot><state>shutoff</state><creationTime>7</creationTime>"
      "<memory snapshot='no'/></domainsnapshot>");
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->memory);
  // Without a memory element (the test driver), the state decides.
  EXPECT_TRUE(snapshotFacts("<domainsnapshot><state>paused</state></domainsnapshot>")->memory);
  EXPECT_FALSE(
      snapshotFacts("<domainsnapshot><state>disk-snapshot</state></domainsnapshot>")->memory);
  EXPECT_EQ(snapshotFacts("<domainsnapshot/>")->creation_time, -1);
  // A state inside another tool's metadata is not the snapshot's.
  EXPECT_FALSE(snapshotFacts("<domainsnapshot><metadata><state>running</state></metadata>"
                             "</domainsnapshot>")
                   ->memory);
  EXPECT_FALSE(snapshotFacts("not xml"));
}

TEST(Introspection, FailureDomainNames) {
  EXPECT_EQ(failureDomainName("KVM1.Example.org"), "kvm1-example-org");
  EXPECT_EQ(failureDomainName("--"), "libvirt-host");
  EXPECT_EQ(failureDomainName(std::string(100, 'a')).size(), 63u);
}

}  // namespace
}  // namespace banlieue::libvirt
