// LibvirtMachine parsing and validation, and the NoCloud files made from it.
#include "plugins/libvirt/src/machine_spec.h"
#include "plugins/libvirt/src/cloud_init.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

namespace banlieue::libvirt {
namespace {

namespace json = sdk::json;

// A valid machine; spec_extra (",\"key\":value...") overrides or adds spec fields.
std::string machineJson(const std::string& spec_extra = "", const std::string& meta_extra = "") {
  auto doc = json::parse(
      R"({"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":"LibvirtMachine",
    "metadata":{"name":"web","namespace":"prod","uid":"3F0C2A4E-0D7B-4C1E-9A55-6B1E2F3A4B5C")" +
          meta_extra + R"(},
    "spec":{"pool":"images","bootSource":{"volume":"debian.qcow2"},"vcpus":2,"memoryMiB":1024,
      "disks":[{"name":"root","sizeGiB":10}]}})",
      "base");
  if (!spec_extra.empty()) {
    auto extra = json::parse("{" + spec_extra.substr(1) + "}", "extra");
    auto& a = doc.GetAllocator();
    for (auto& m : extra.GetObject()) {
      rapidjson::Value key(m.name, a);
      rapidjson::Value value(m.value, a);
      doc["spec"].RemoveMember(key);
      doc["spec"].AddMember(key, value, a);
    }
  }
  return json::serialize(doc);
}

MachineSpec parse(const std::string& text) {
  auto doc = json::parse(text, "test");
  return parseMachine(doc);
}

sdk::Error parseError(const std::string& text) {
  try {
    parse(text);
  } catch (const sdk::Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an error for " << text;
  return {sdk::Code::kOk, "", ""};
}

TEST(MachineSpec, DefaultsAndDerivedNames) {
  MachineSpec m = parse(machineJson());
  EXPECT_EQ(m.domain_name, "prod-web");
  EXPECT_EQ(m.domain_uuid, "3f0c2a4e-0d7b-4c1e-9a55-6b1e2f3a4b5c");
  EXPECT_EQ(m.boot_kind, "backingVolume");
  EXPECT_EQ(m.firmware, "efi");
  EXPECT_EQ(m.desired_power, PowerState::kPoweredOn);
  EXPECT_EQ(m.rootVolumeName(), "prod-web-root.qcow2");
  EXPECT_EQ(m.seedVolumeName(), "prod-web-cidata.iso");
  EXPECT_FALSE(m.needsSeed());
  EXPECT_EQ(m.shutdown_timeout, std::chrono::seconds(120));
}

// Cluster API's copies (docs/adr/0050): no pool until the controller fills it from the storage
// class; an Ignition bootstrap cannot reach a NoCloud seed.
TEST(MachineSpec, AMissingPoolIsUnresolvedAndIgnitionIsRefused) {
  auto doc = json::parse(machineJson(), "test");
  doc["spec"].RemoveMember("pool");
  auto unplaced = parseError(json::serialize(doc));
  EXPECT_EQ(unplaced.reason(), "PlacementUnresolved");
  EXPECT_NE(std::string(unplaced.what()).find("spec.pool"), std::string::npos);
  auto ignition = parseError(machineJson(R"(,"userData":"{}","userDataFormat":"ignition")"));
  EXPECT_EQ(ignition.reason(), "UserDataFormatUnsupported");
  EXPECT_NO_THROW(
      parse(machineJson(R"(,"userData":"#cloud-config","userDataFormat":"cloud-config")")));
}

TEST(MachineSpec, NonUuidUidsGetAStableDerivedUuid) {
  std::string a = domainUuidFor("not-a-uuid");
  EXPECT_EQ(a, domainUuidFor("not-a-uuid"));
  EXPECT_NE(a, domainUuidFor("not-a-uuid-2"));
  ASSERT_EQ(a.size(), 36u);
  EXPECT_EQ(a[14], '8');  // version nibble
}

// The providerID reconcile reports names the domain again for the snapshot slot.
TEST(MachineSpec, ProviderIdNamesTheDomainUuid) {
  const std::string uuid = domainUuidFor("3F0C2A4E-0D7B-4C1E-9A55-6B1E2F3A4B5C");
  EXPECT_EQ(providerIdFor(uuid), "libvirt://" + uuid);
  EXPECT_EQ(domainUuidOfProviderId(providerIdFor(uuid)), uuid);
  EXPECT_EQ(domainUuidOfProviderId("libvirt://3F0C2A4E-0D7B-4C1E-9A55-6B1E2F3A4B5C"), uuid);
  for (const char* other : {"", "libvirt://", "libvirt://web", "vsphere://vm-42",
                            "libvirt://3f0c2a4e-0d7b-4c1e-9a55-6b1e2f3a4b5c/x"}) {
    EXPECT_EQ(domainUuidOfProviderId(other), std::nullopt) << other;
  }
}

TEST(MachineSpec, NicsGetStableMacsAndStaticAddresses) {
  MachineSpec m = parse(machineJson(
      R"(,"network":[{"source":{"name":"default"}},
                     {"name":"data","source":{"kind":"bridge","name":"br0"},"macAddress":"52:54:00:AA:BB:CC",
                      "ipam":{"static":{"address":"10.0.0.5","prefix":24,"gateway":"10.0.0.1",
                                        "nameservers":["10.0.0.2"],"domain":"example.org"}}}])"));
  ASSERT_EQ(m.nics.size(), 2u);
  EXPECT_EQ(m.nics[0].name, "nic0");
  EXPECT_EQ(m.nics[0].mac.substr(0, 9), "52:54:00:");
  EXPECT_EQ(m.nics[0].mac,
            parse(machineJson(R"(,"network":[{"source":{"name":"default"}}])")).nics[0].mac);
  EXPECT_EQ(m.nics[1].mac, "52:54:00:aa:bb:cc");
  ASSERT_TRUE(m.nics[1].static_address);
  EXPECT_TRUE(m.needsSeed());

  auto files = noCloudFiles(m);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].name, "meta-data");
  EXPECT_NE(files[0].content.find("instance-id: \"3F0C2A4E"), std::string::npos);
  EXPECT_EQ(files[1].content, "#cloud-config\n{}\n");
  const std::string& net = files[2].content;
  EXPECT_NE(net.find("macaddress: \"52:54:00:aa:bb:cc\""), std::string::npos) << net;
  EXPECT_NE(net.find("addresses: [\"10.0.0.5/24\"]"), std::string::npos) << net;
  EXPECT_NE(net.find("via: \"10.0.0.1\""), std::string::npos) << net;
  EXPECT_NE(net.find("search: [\"example.org\"]"), std::string::npos) << net;
  EXPECT_NE(net.find("dhcp4: true"), std::string::npos) << net;  // the first NIC
}

TEST(MachineSpec, UserDataIsCarriedVerbatimAndQuotingCannotInjectKeys) {
  MachineSpec m =
      parse(machineJson(R"(,"userData":"#cloud-config\nruncmd: [ls]\n")", R"(,"annotations":{})"));
  m.name = "evil\"\nuser: root";
  auto files = noCloudFiles(m);
  EXPECT_EQ(files[1].content, "#cloud-config\nruncmd: [ls]\n");
  EXPECT_NE(files[0].content.find(R"(local-hostname: "evil\"\nuser: root")"), std::string::npos)
      << files[0].content;
}

TEST(MachineSpec, ShutdownTimeoutAnnotation) {
  MachineSpec m = parse(
      machineJson("", R"(,"annotations":{"libvirt.banlieue.io/shutdown-timeout-seconds":"5"})"));
  EXPECT_EQ(m.shutdown_timeout, std::chrono::seconds(5));
  auto e = parseError(
      machineJson("", R"(,"annotations":{"libvirt.banlieue.io/shutdown-timeout-seconds":"soon"})"));
  EXPECT_NE(std::string(e.what()).find("shutdown-timeout-seconds"), std::string::npos);
}

TEST(MachineSpec, BadInputNamesTheField) {
  struct Case {
    std::string json;
    std::string field;
  } cases[] = {
      {R"({"metadata":{"name":"a","uid":"u"},"spec":{"pool":"p","bootSource":{},"memoryMiB":64,"disks":[{"name":"r","sizeGiB":1}]}})",
       "spec.bootSource.volume"},
      {machineJson(R"(,"vcpus":0)"), "spec.vcpus"},
      {machineJson(R"(,"disks":[])"), "spec.disks"},
      {machineJson(R"(,"disks":[{"name":"r","sizeGiB":0}])"), "spec.disks[0].sizeGiB"},
      {machineJson(R"(,"disks":[{"name":"r","sizeGiB":1},{"name":"r","sizeGiB":1}])"), "repeats"},
      {machineJson(R"(,"disks":[{"name":"r","sizeGiB":1,"bus":"ide"}])"), "spec.disks[0].bus"},
      {machineJson(R"(,"firmware":"uefi")"), "spec.firmware"},
      {machineJson(R"(,"domainName":"a/b")"), "spec.domainName"},
      {machineJson(R"(,"network":[{"source":{"kind":"vlan","name":"x"}}])"), "source.kind"},
      {machineJson(R"(,"network":[{"source":{"name":"x"},"macAddress":"zz"}])"), "macAddress"},
      {machineJson(
           R"(,"network":[{"source":{"name":"x"},"ipam":{"static":{"address":"10.0.0.300","prefix":24}}}])"),
       "ipam.static.address"},
      {machineJson(R"(,"desiredPowerState":"On")"), "desiredPowerState"},
      {machineJson(R"(,"userData":{"secretRef":"x"})"), "spec.userData"},
  };
  for (const auto& c : cases) {
    auto e = parseError(c.json);
    EXPECT_EQ(e.code(), sdk::Code::kInvalidArgument) << c.json;
    EXPECT_EQ(e.reason(), "InvalidSpec");
    EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos)
        << "message '" << e.what() << "' does not name " << c.field;
  }
}

TEST(MachineSpec, VolumeNameRules) {
  EXPECT_TRUE(isSafeVolumeName("debian-12.qcow2"));
  EXPECT_FALSE(isSafeVolumeName(".."));
  EXPECT_FALSE(isSafeVolumeName("a b"));
  EXPECT_FALSE(isSafeVolumeName("a'b"));
  EXPECT_FALSE(isSafeVolumeName(std::string(201, 'a')));
}

}  // namespace
}  // namespace banlieue::libvirt
