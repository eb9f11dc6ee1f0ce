// The JSON codecs of the API types: round trips, unknown fields, omit-when-empty, defaults and
// errors that name the field.
#include "host/api/codec.h"
#include "host/api/libvirt.h"
#include "host/api/provider.h"
#include "host/api/proxmox.h"
#include "host/api/virtual_machine.h"
#include "host/api/vm_class.h"
#include "host/api/vsphere.h"
#include "host/api/yaml.h"
#include "tests/support/build_paths.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace banlieue::api {
namespace {

namespace json = sdk::json;

rapidjson::Document parse(const std::string& text) {
  return json::parse(text, "test");
}

// True when every member of `part` is in `whole` with the same value (lists compared whole).
bool isSubset(const rapidjson::Value& part, const rapidjson::Value& whole, std::string& where) {
  if (part.IsObject() && whole.IsObject()) {
    for (const auto& m : part.GetObject()) {
      auto it = whole.FindMember(m.name);
      if (it == whole.MemberEnd()) {
        where = std::string(m.name.GetString()) + " missing";
        return false;
      }
      if (!isSubset(m.value, it->value, where)) {
        where = std::string(m.name.GetString()) + "." + where;
        return false;
      }
    }
    return true;
  }
  if (part.IsArray() && whole.IsArray() && part.Size() == whole.Size()) {
    for (rapidjson::SizeType i = 0; i < part.Size(); ++i) {
      if (!isSubset(part[i], whole[i], where)) {
        where = "[" + std::to_string(i) + "]" + where;
        return false;
      }
    }
    return true;
  }
  if (part == whole) return true;
  where = ": " + json::serialize(part) + " != " + json::serialize(whole);
  return false;
}

template <class T>
void expectRoundTrip(const std::string& input) {
  auto decoded = fromJson<T>(input);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  std::string encoded = toJson(*decoded);
  // Everything the input said survives, and a second pass is stable.
  std::string where;
  EXPECT_TRUE(isSubset(parse(input), parse(encoded), where)) << where << "\n" << encoded;
  auto again = fromJson<T>(encoded);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(toJson(*again), encoded);
}

const char* kFullVm = R"({
  "apiVersion": "banlieue.io/v1alpha1", "kind": "VirtualMachine",
  "metadata": {"name": "web-01", "namespace": "team-a", "labels": {"app": "web"},
               "annotations": {"banlieue.io/migrate": "true"}, "generation": 3,
               "finalizers": ["banlieue.io/virtualmachine"], "resourceVersion": "42",
               "ownerReferences": [{"apiVersion": "banlieue.io/v1alpha1",
                 "kind": "VirtualMachinePool", "name": "p", "uid": "u-1", "controller": true}]},
  "spec": {
    "classRef": {"name": "small"}, "imageRef": {"name": "ubuntu"},
    "placement": {"providerSelector": {"matchLabels": {"dc": "dc1"},
                  "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
                  "failureDomainSelector": {"matchLabels": {"cluster": "a"}},
                  "antiAffinity": [{"topologyKey": "cluster",
                                    "labelSelector": {"matchLabels": {"app": "web"}},
                                    "mode": "preferred"}]},
    "desiredPowerState": "PoweredOff",
    "userData": {"secretRef": {"name": "ud", "key": "user-data"}},
    "migrationPolicy": "manual", "paused": true,
    "networkOverrides": [{"name": "eth0", "static": {"address": "10.0.0.5", "prefix": 24,
                          "gateway": "10.0.0.1", "nameservers": ["10.0.0.53"],
                          "domain": "example.com"}}],
    "hardwareOverride": {"cpus": 4, "memoryMiB": 8192,
                         "diskOverrides": [{"name": "root", "sizeGiB": 40}]},
    "folder": "/dc1/vm/web"},
  "status": {
    "scheduled": {"providerName": "vc1", "providerClass": "vsphere", "failureDomain": "dc1-a",
                  "resolvedStorage": [{"className": "gold", "backendId": "ds1"}],
                  "resolvedNetworks": [{"className": "prod", "backendId": "pg1"}],
                  "scheduledAt": "2026-11-29T10:00:00Z"},
    "infrastructureRef": {"apiGroup": "infrastructure.banlieue.io", "kind": "VSphereMachine",
                          "name": "web-01"},
    "initialization": {"provisioned": true},
    "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
    "observedPowerState": "PoweredOff",
    "tpmEndorsementCertificates": ["-----BEGIN CERTIFICATE-----"],
    "heldAddresses": [{"interface": "eth0", "networkClass": "prod", "address": "10.0.0.5"}],
    "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled",
                    "message": "ok", "lastTransitionTime": "2026-11-29T10:00:00Z",
                    "observedGeneration": 3}],
    "observedGeneration": 3}})";

TEST(ApiCodecTest, VirtualMachineRoundTripsEveryField) {
  expectRoundTrip<VirtualMachine>(kFullVm);
  auto vm = fromJson<VirtualMachine>(kFullVm);
  ASSERT_TRUE(vm.ok());
  EXPECT_EQ(vm->spec.placement.anti_affinity.at(0).mode, "preferred");
  EXPECT_EQ(vm->spec.hardware_override->disk_overrides.at(0).size_gib, 40);
  EXPECT_EQ(vm->status.conditions.at(0).observed_generation, 3);
  EXPECT_EQ(vm->metadata.owner_references.at(0).controller, std::optional<bool>(true));
}

TEST(ApiCodecTest, UnknownFieldsAreToleratedOnRead) {
  auto vm = fromJson<VirtualMachine>(R"({"kind": "VirtualMachine", "future": {"x": 1},
    "metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}]},
    "spec": {"classRef": {"name": "c", "extra": true}, "imageRef": {"name": "i"},
             "newKnob": [1, 2]}})");
  ASSERT_TRUE(vm.ok()) << vm.status().message();
  EXPECT_EQ(vm->spec.class_ref.name, "c");
  EXPECT_EQ(toJson(*vm).find("newKnob"), std::string::npos);
}

TEST(ApiCodecTest, EmptyValuesAreOmittedOnWrite) {
  VirtualMachine vm;
  vm.api_version = "banlieue.io/v1alpha1";
  vm.kind = "VirtualMachine";
  vm.metadata.name = "a";
  vm.spec.class_ref.name = "c";
  vm.spec.image_ref.name = "i";
  auto doc = parse(toJson(vm));
  EXPECT_FALSE(doc.HasMember("status"));
  EXPECT_FALSE(doc["metadata"].HasMember("labels"));
  EXPECT_FALSE(doc["spec"].HasMember("paused"));
  EXPECT_FALSE(doc["spec"].HasMember("userData"));
  EXPECT_FALSE(doc["spec"].HasMember("networkOverrides"));
  // Fields with a default are always written, so a reader never substitutes a different value.
  EXPECT_STREQ(doc["spec"]["desiredPowerState"].GetString(), "PoweredOn");
}

TEST(ApiCodecTest, DefaultsApplyOnReadAndNonZeroDefaultsSurviveFalse) {
  auto pool = fromJson<VirtualMachinePool>(R"({"spec": {"warmReplicas": 1,
      "readiness": "GuestReady", "recycleOnImageChange": false,
      "template": {"spec": {"classRef": {"name": "c"}, "imageRef": {"name": "i"}}}}})");
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  EXPECT_EQ(pool->spec.max_surge, 2);
  EXPECT_EQ(pool->spec.provisioning_timeout_seconds, 1800);
  EXPECT_FALSE(pool->spec.recycle_on_image_change);
  EXPECT_EQ(pool->spec.template_.spec.desired_power_state, "PoweredOn");
  auto doc = parse(toJson(*pool));
  EXPECT_FALSE(doc["spec"]["recycleOnImageChange"].GetBool());
}

struct BadInput {
  const char* json;
  const char* message;
};

TEST(ApiCodecTest, ErrorsNameTheField) {
  const BadInput cases[] = {
      {R"({"spec": {"imageRef": {"name": "i"}}})", "spec.classRef: Required value"},
      {R"({"spec": {"classRef": {"name": "c"}, "imageRef": {"name": "i"},
           "desiredPowerState": "On"}})",
       "spec.desiredPowerState: Unsupported value: \"On\""},
      {R"({"spec": {"classRef": {"name": "c"}, "imageRef": {"name": "i"},
           "placement": {"providerSelector": {"matchExpressions":
             [{"key": "a", "operator": "Equals"}]}}}})",
       "spec.placement.providerSelector.matchExpressions[0].operator: Unsupported value"},
      {R"({"spec": {"classRef": {"name": "c"}, "imageRef": {"name": "i"},
           "hardwareOverride": {"cpus": "four"}}})",
       "spec.hardwareOverride.cpus: must be a 32-bit integer"},
      {R"({"spec": {"classRef": "c", "imageRef": {"name": "i"}}})",
       "spec.classRef: must be an object"},
  };
  for (const auto& c : cases) {
    auto vm = fromJson<VirtualMachine>(c.json);
    ASSERT_FALSE(vm.ok()) << c.json;
    EXPECT_NE(vm.status().message().find(c.message), std::string::npos)
        << vm.status().message() << " should contain " << c.message;
  }
  auto cls = fromJson<VMClass>(R"({"spec": {"hardware": {"cpus": 0, "memoryMiB": 1024,
      "disks": [{"name": "r", "sizeGiB": 1, "storageClass": "g"}]}}})");
  ASSERT_FALSE(cls.ok());
  EXPECT_NE(cls.status().message().find("spec.hardware.cpus: Invalid value: 0"), std::string::npos);
  auto not_json = fromJson<VMClass>("{\"spec\": ");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().reason(), "InvalidJson");
}

TEST(ApiCodecTest, QuantitiesAcceptNumbersAndStrings) {
  auto pc = fromJson<ProviderClass>(R"({"spec": {"backend": "libvirt",
      "resources": {"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"cpu": "500m"}}}})");
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_EQ(pc->spec.resources->limits.at("cpu").value, "2");
  EXPECT_EQ(pc->spec.resources->limits.at("memory").value, "1Gi");
  EXPECT_EQ(pc->spec.replicas, 1);
  EXPECT_EQ(pc->spec.deployment, "Managed");
}

TEST(ApiCodecTest, InfraKindsRoundTrip) {
  expectRoundTrip<VSphereMachine>(R"({"apiVersion": "infrastructure.banlieue.io/v1beta2",
    "kind": "VSphereMachine", "metadata": {"name": "m"},
    "spec": {"providerID": "vsphere://abc", "failureDomain": "dc1-a",
             "providerRef": {"name": "vc1"}, "template": "ubuntu", "templateFolder": "/t/a",
             "datacenter": "DC1", "cluster": "A", "datastore": "ds1", "numCpus": 2,
             "memoryMiB": 2048, "firmware": "efi",
             "disks": [{"name": "root", "sizeGiB": 20, "provisioning": "thick"}],
             "network": [{"name": "eth0", "portGroup": "pg",
                          "ipam": {"static": {"address": "10.0.0.2", "prefix": 24}}}]},
    "status": {"initialization": {"provisioned": false}, "vmRef": "vm-12",
               "observedPowerState": "PoweredOn", "guestInstalled": true,
               "operationToken": "task-7"}})");
  expectRoundTrip<LibvirtMachine>(R"({"spec": {"providerRef": {"name": "h1"}, "pool": "default",
    "domainName": "ns-vm", "bootSource": {"kind": "installMedia", "volume": "ubuntu.iso"},
    "vcpus": 1, "memoryMiB": 512, "disks": [{"name": "root", "sizeGiB": 8, "bus": "sata"}],
    "network": [{"name": "eth0", "source": {"kind": "bridge", "name": "br0"}}]},
    "status": {"domainUuid": "u", "addressSource": "dhcpLease",
               "addresses": [{"type": "InternalIP", "address": "192.168.122.5"}]}})");
  expectRoundTrip<ProxmoxMachine>(R"({"spec": {"providerRef": {"name": "pve"}, "node": "pve1",
    "templateVmid": 9000, "storage": "local-lvm", "cores": 2, "memoryMiB": 2048,
    "network": [{"name": "eth0", "bridge": "vmbr0", "vlan": 20}]},
    "status": {"vmid": 101, "node": "pve1"}})");
  expectRoundTrip<VSphereMachineTemplate>(R"({"spec": {"template": {
    "metadata": {"labels": {"a": "b"}},
    "spec": {"providerRef": {"name": "vc1"}, "template": "t", "datacenter": "d",
             "cluster": "c", "datastore": "s", "numCpus": 1, "memoryMiB": 128,
             "firmware": "bios", "disks": [{"name": "r", "sizeGiB": 1}],
             "network": [{"name": "n", "portGroup": "p"}]}}}})");
  expectRoundTrip<VSphereCluster>(R"({"spec": {"controlPlaneEndpoint": {"host": "10.0.0.1",
    "port": 6443}, "providerRefs": [{"name": "vc1"}, {"name": "vc2"}]},
    "status": {"failureDomains": [{"name": "a", "controlPlane": true,
                                   "attributes": {"datacenter": "DC1"}}]}})");
}

TEST(ApiCodecTest, ProviderAndImageRoundTrip) {
  expectRoundTrip<Provider>(R"({"spec": {"providerClassRef": {"name": "vsphere"},
    "connection": {"endpoint": "https://vc/sdk", "credentialsRef": {"name": "c"},
                   "insecureSkipTLSVerify": true,
                   "caBundle": {"secretRef": {"name": "ca", "key": "ca.crt"}}},
    "capabilities": {"storageClasses": [{"name": "gold", "target": {"datastore": "d"},
        "perZone": [{"datacenter": "DC1", "cluster": "B", "target": {"datastore": "e"}}]}],
      "networkClasses": [{"name": "prod", "target": {"portGroup": "p"},
        "subnet": {"gateway": "10.0.0.1"},
        "perZoneSubnet": [{"datacenter": "DC1", "cluster": "B",
                           "subnet": {"gateway": "10.1.0.1"}}]}],
      "features": ["vtpm"]},
    "failureDomainNameOverrides": [{"datacenter": "DC1", "cluster": "A", "name": "a"}]},
    "status": {"failureDomains": [{"name": "a", "labels": {"datacenter": "DC1"},
      "attributes": {"availableStorageClasses": ["gold"], "raw": {"cluster": "A"},
                     "importTargets": ["pool-a", "pool-b"]}}],
      "workload": {"mode": "External", "namespace": "ns", "readyReplicas": 0}}})");
  expectRoundTrip<VMImage>(R"({"spec": {"osDistribution": "ubuntu", "osVersion": "22.04",
    "sources": [{"providerClass": "libvirt", "kind": "BackingFile", "ref": "/i.qcow2"}],
    "template": {"disk": {"size": 50}, "installMode": "deferred"}},
    "status": {"perProvider": [{"providerName": "h1", "providerNamespace": "ns",
      "ready": false, "zones": [{"name": "h1", "ready": false, "reason": "Importing"},
        {"name": "h2/pool-a", "failureDomain": "h2", "target": "pool-a", "ready": true,
         "resolvedRef": "u-0123456789ab.raw"}]}],
      "buildArtifact": {"kind": "iso", "phase": "Building",
                        "ociArtifact": {"phase": "Pushing"}}}})");
}

// A per-target row (<failureDomain>/<target>) names its failure domain in failureDomain; a row
// of one import per failure domain is named after it.
TEST(ApiCodecTest, AZoneRowsFailureDomainIsItsFieldElseItsName) {
  ImageZone per_domain{.name = "h1"};
  EXPECT_EQ(per_domain.failureDomainName(), "h1");
  ImageZone per_target{.name = "h1/pool-a", .failure_domain = "h1", .target = "pool-a"};
  EXPECT_EQ(per_target.failureDomainName(), "h1");
}

// Every banlieue object in examples/ decodes and round-trips through its C++ type.
TEST(ApiCodecTest, ExamplesDecodeThroughTheirTypes) {
  std::map<std::string, std::function<StatusOr<std::string>(const std::string&)>> codecs = {
      {"VirtualMachine",
       [](const std::string& j) -> StatusOr<std::string> {
         auto v = fromJson<VirtualMachine>(j);
         if (!v.ok()) return v.status();
         return toJson(*v);
       }},
      {"VMClass",
       [](const std::string& j) -> StatusOr<std::string> {
         auto v = fromJson<VMClass>(j);
         if (!v.ok()) return v.status();
         return toJson(*v);
       }},
      {"VMImage",
       [](const std::string& j) -> StatusOr<std::string> {
         auto v = fromJson<VMImage>(j);
         if (!v.ok()) return v.status();
         return toJson(*v);
       }},
      {"Provider",
       [](const std::string& j) -> StatusOr<std::string> {
         auto v = fromJson<Provider>(j);
         if (!v.ok()) return v.status();
         return toJson(*v);
       }},
      {"VirtualMachinePool",
       [](const std::string& j) -> StatusOr<std::string> {
         auto v = fromJson<VirtualMachinePool>(j);
         if (!v.ok()) return v.status();
         return toJson(*v);
       }},
      {"VirtualMachineClaim",
       [](const std::string& j) -> StatusOr<std::string> {
         auto v = fromJson<VirtualMachineClaim>(j);
         if (!v.ok()) return v.status();
         return toJson(*v);
       }},
  };
  int decoded = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(BANLIEUE_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto docs = parseYamlDocuments(text.str(), entry.path().string());
    ASSERT_TRUE(docs.ok()) << docs.status().message();
    for (const auto& doc : *docs) {
      auto it = codecs.find(json::stringOr(&doc, "kind"));
      if (it == codecs.end()) continue;
      auto out = it->second(json::serialize(doc));
      ASSERT_TRUE(out.ok()) << entry.path() << ": " << out.status().message();
      std::string where;
      EXPECT_TRUE(isSubset(doc, parse(*out), where)) << entry.path() << ": " << where;
      ++decoded;
    }
  }
  EXPECT_GE(decoded, 11);
}

}  // namespace
}  // namespace banlieue::api
