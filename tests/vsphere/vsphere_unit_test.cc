// vim25 encoding and decoding on recorded vcsim responses (recorded/*_vcsim.xml, the fault
// files without "vcenter") and vCenter-shaped ones written from the WSDL, the session logic
// over a scripted transport, and the pure failure-domain rules. No network.
#include "plugins/vsphere/src/console.h"
#include "plugins/vsphere/src/image_import.h"
#include "plugins/vsphere/src/inventory.h"
#include "plugins/vsphere/src/machine.h"
#include "plugins/vsphere/src/machine_spec.h"
#include "plugins/vsphere/src/naming.h"
#include "plugins/vsphere/src/snapshots.h"
#include "plugins/vsphere/src/soap_client.h"
#include "plugins/vsphere/src/task_poll.h"
#include "tests/support/build_paths.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <memory>
#include <sstream>

namespace banlieue::vsphere {
namespace {

using ::testing::HasSubstr;

std::string recorded(const std::string& name) {
  std::ifstream in(std::string(BANLIEUE_VSPHERE_RECORDED) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A VM's snapshot property shaped as vCenter writes it (VirtualMachineSnapshotInfo, from the
// WSDL): three levels, the current one in the middle. memory follows the state a revert
// restores: poweredOff is a disk-only snapshot, poweredOn and suspended hold memory.
TEST(VimResponses, SnapshotTreeIsFlattenedAtEveryDepth) {
  pugi::xml_document doc;
  ASSERT_TRUE(
      doc.load_string(R"(<val xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance")"
                      R"( xsi:type="VirtualMachineSnapshotInfo">)"
                      R"(<currentSnapshot type="VirtualMachineSnapshot">snapshot-2)"
                      R"(</currentSnapshot>)"
                      R"(<rootSnapshotList>)"
                      R"(<snapshot type="VirtualMachineSnapshot">snapshot-1</snapshot>)"
                      R"(<vm type="VirtualMachine">vm-9</vm><name>base</name>)"
                      R"(<createTime>2026-01-02T03:04:05.123Z</createTime>)"
                      R"(<state>poweredOff</state><quiesced>false</quiesced>)"
                      R"(<childSnapshotList>)"
                      R"(<snapshot type="VirtualMachineSnapshot">snapshot-2</snapshot>)"
                      R"(<name>live</name><createTime>2026-01-02T04:00:00Z</createTime>)"
                      R"(<state>poweredOn</state>)"
                      R"(<childSnapshotList>)"
                      R"(<snapshot type="VirtualMachineSnapshot">snapshot-3</snapshot>)"
                      R"(<name>asleep</name><state>suspended</state>)"
                      R"(</childSnapshotList></childSnapshotList></rootSnapshotList></val>)"));
  auto tree = parseSnapshotInfo(doc.first_child());
  ASSERT_EQ(tree.size(), 3u);
  EXPECT_EQ(tree[0].ref, (MoRef{"VirtualMachineSnapshot", "snapshot-1"}));
  EXPECT_EQ(tree[0].name, "base");
  EXPECT_EQ(tree[0].created_at, "2026-01-02T03:04:05.123Z");
  EXPECT_FALSE(tree[0].memory);
  EXPECT_FALSE(tree[0].current);
  EXPECT_EQ(tree[1].name, "live");
  EXPECT_TRUE(tree[1].memory);
  EXPECT_TRUE(tree[1].current);
  EXPECT_EQ(tree[2].ref.value, "snapshot-3");
  EXPECT_TRUE(tree[2].memory);
  EXPECT_FALSE(tree[2].current);
  EXPECT_TRUE(parseSnapshotInfo(pugi::xml_node()).empty()) << "a VM without snapshots";
}

// A token names its task and the phase that started it; anything else is no token at all.
TEST(VimTasks, OperationTokensNameAPhaseAndATask) {
  auto token = parseTaskToken(std::string("snapshot-create:task-12"));
  ASSERT_TRUE(token.has_value());
  EXPECT_EQ(token->phase, "snapshot-create");
  EXPECT_EQ(token->task, (MoRef{"Task", "task-12"}));
  EXPECT_EQ(token->text(), "snapshot-create:task-12");
  EXPECT_TRUE(parseTaskToken(std::string("snapshot-create:task-12"), "snapshot-create"));
  EXPECT_FALSE(parseTaskToken(std::string("snapshot-create:task-12"), "snapshot-delete"));
  for (const char* garbage : {"", "settled", ":task-1", "clone:"}) {
    EXPECT_FALSE(parseTaskToken(std::string(garbage))) << garbage;
  }
  EXPECT_FALSE(parseTaskToken(std::nullopt));
}

// When a VSphereMachine reply says the machine is settled (docs/provider-contract.md,
// "Settled replies"): a reply that settles too early leaves a change unfinished until the
// resync, since the host skips the passes that change none of the machine's inputs.
TEST(VSphereMachineAtRest, OnlyAPassThatFoundTheVmAsTheSpecAsksSettles) {
  const PassSummary running{.carried_token = false,
                            .power_as_desired = true,
                            .hardware_held = false,
                            .powered_on = true,
                            .tools_running = true,
                            .has_addresses = true};
  EXPECT_TRUE(atRest(running));
  PassSummary off = running;
  off.powered_on = off.tools_running = off.has_addresses = false;
  EXPECT_TRUE(atRest(off)) << "off as asked: no guest to wait for";

  struct Case {
    const char* why;
    void (*change)(PassSummary&);
  };
  const Case cases[] = {
      {"the pass that saw a task end", [](PassSummary& p) { p.carried_token = true; }},
      {"a power state not yet the desired one", [](PassSummary& p) { p.power_as_desired = false; }},
      {"a resize that waits for a restart", [](PassSummary& p) { p.hardware_held = true; }},
      {"a running guest without VMware Tools", [](PassSummary& p) { p.tools_running = false; }},
      {"a running guest without a known address", [](PassSummary& p) { p.has_addresses = false; }},
  };
  for (const auto& c : cases) {
    PassSummary pass = running;
    c.change(pass);
    EXPECT_FALSE(atRest(pass)) << c.why;
  }
}

TEST(VimXml, WriterEscapesValuesAndTypesElements) {
  XmlWriter w;
  w.open("spec", "VirtualMachineConfigSpec")
      .text("name", "a<b>&\"c'")
      .moref("pool", {"ResourcePool", "resgroup-1"})
      .close("spec");
  EXPECT_EQ(w.str(),
            R"(<spec xsi:type="VirtualMachineConfigSpec"><name>a&lt;b&gt;&amp;&quot;c&apos;</name>)"
            R"(<pool type="ResourcePool">resgroup-1</pool></spec>)");
}

TEST(VimXml, XsiTypeResolvesByNamespaceUriNotPrefix) {
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(
      R"(<r xmlns:x="http://www.w3.org/2001/XMLSchema-instance" xmlns:other="urn:other">)"
      R"(<a x:type="xsd:string"/><b other:type="Nope"/><c XMLSchema-instance:type="ArrayOfManagedObjectReference" xmlns:XMLSchema-instance="http://www.w3.org/2001/XMLSchema-instance"/></r>)"));
  pugi::xml_node r = doc.document_element();
  EXPECT_EQ(xsiType(child(r, "a")), "string");
  EXPECT_EQ(xsiType(child(r, "b")), "");  // a "type" attribute in another namespace
  EXPECT_EQ(xsiType(child(r, "c")), "ArrayOfManagedObjectReference");
}

TEST(VimResponses, RecordedVcsimRetrievePropertiesDecodes) {
  SoapResponse r = SoapClient::parseEnvelope(recorded("retrieve_properties_vcsim.xml"), 200);
  std::vector<ObjectContent> objects;
  EXPECT_EQ(parseRetrieveResult(r.returnval(), objects), "");  // one page
  Inventory inv = Inventory::fromObjects(objects);
  ASSERT_EQ(inv.datacenters.size(), 1u);
  EXPECT_EQ(inv.datacenters[0].name, "DC0");
  EXPECT_EQ(inv.datacenters[0].vm_folder, (MoRef{"Folder", "folder-3"}));
  ASSERT_EQ(inv.clusters.size(), 1u);
  EXPECT_EQ(inv.clusters[0].name, "DC0_C0");
  EXPECT_EQ(inv.clusters[0].networks.size(), 3u);
  ASSERT_EQ(inv.datastores.size(), 1u);
  EXPECT_EQ(inv.datastores[0].free_space, 247782858752);
  ASSERT_EQ(inv.networks.size(), 3u);
  EXPECT_FALSE(inv.networks[0].distributed);
  EXPECT_TRUE(inv.networks[2].distributed);
}

TEST(VimResponses, PagedResultKeepsTokenAndDecodesTaskErrors) {
  SoapResponse r = SoapClient::parseEnvelope(recorded("retrieve_properties_paged.xml"), 200);
  std::vector<ObjectContent> objects;
  EXPECT_EQ(parseRetrieveResult(r.returnval(), objects), "1");
  ASSERT_EQ(objects.size(), 2u);
  TaskInfo failed = parseTaskInfo(objects[0]);
  EXPECT_EQ(failed.state, TaskState::kError);
  ASSERT_TRUE(failed.error.has_value());
  EXPECT_EQ(failed.error->kind(), FaultKind::kInvalidPowerState);
  EXPECT_EQ(failed.error->code(), sdk::Code::kFailedPrecondition);
  EXPECT_THAT(failed.error->what(), HasSubstr("Powered off"));
  TaskInfo ok = parseTaskInfo(objects[1]);
  EXPECT_EQ(ok.state, TaskState::kSuccess);
  EXPECT_EQ(ok.result, (MoRef{"VirtualMachine", "vm-1001"}));
  EXPECT_FALSE(ok.error.has_value());  // a missingSet entry is absence, not an error
}

TEST(VimFaults, SoapFaultsBecomeTypedErrors) {
  auto fault = [](const std::string& file) -> VimFault {
    try {
      (void)SoapClient::parseEnvelope(recorded(file), 500);
    } catch (const VimFault& f) {
      return f;
    }
    throw std::runtime_error("no fault in " + file);
  };
  VimFault login = fault("fault_invalid_login.xml");
  EXPECT_EQ(login.kind(), FaultKind::kInvalidLogin);
  EXPECT_EQ(login.code(), sdk::Code::kUnauthenticated);
  EXPECT_EQ(login.reason(), "InvalidLogin");
  EXPECT_EQ(fault("fault_not_authenticated.xml").kind(), FaultKind::kNotAuthenticated);
  VimFault dup = fault("fault_duplicate_name_vcenter.xml");
  EXPECT_EQ(dup.kind(), FaultKind::kDuplicateName);
  EXPECT_EQ(dup.code(), sdk::Code::kAlreadyExists);
  EXPECT_THAT(dup.toError("creating folder").what(), HasSubstr("'vms' already exists"));
}

TEST(VimFaults, UnknownAndHostileFaultTypesGiveCamelCaseReasons) {
  EXPECT_EQ(VimFault("HostConnectFault", "").reason(), "HostConnectFault");
  EXPECT_EQ(VimFault("HostConnectFault", "").code(), sdk::Code::kUnknown);
  EXPECT_TRUE(sdk::isConditionReason(VimFault("bad type<>", "").reason()));
  EXPECT_TRUE(sdk::isConditionReason(VimFault("", "").reason()));
}

TEST(VimResponses, GarbageIsAClearErrorNotACrash) {
  for (const char* text :
       {"", "not xml", "<a/>", "<soapenv:Envelope xmlns:soapenv=\"x\"/>",
        "<Envelope><Body/></Envelope>", "<Envelope><Body><R/></Body></Envelope>"}) {
    try {
      (void)SoapClient::parseEnvelope(text, 502);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const sdk::Error& e) {
      EXPECT_EQ(e.reason(), "InvalidResponse") << text;
    }
  }
}

// Answers each request with the next canned response and records what was sent.
class ScriptedTransport final : public HttpTransport {
 public:
  struct Shared {
    std::deque<HttpResponse> responses;
    std::vector<HttpRequest> requests;
  };
  explicit ScriptedTransport(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds) override {
    shared_->requests.push_back(request);
    if (shared_->responses.empty()) throw TransportError(TransportError::Kind::kIo, "no script");
    HttpResponse r = shared_->responses.front();
    shared_->responses.pop_front();
    return r;
  }
  void reset() override {}

 private:
  std::shared_ptr<Shared> shared_;
};

HttpResponse ok(const std::string& body, const std::string& cookie = "") {
  HttpResponse r;
  r.status = 200;
  r.body =
      R"(<?xml version="1.0"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>)" +
      body + "</soapenv:Body></soapenv:Envelope>";
  if (!cookie.empty()) r.headers.emplace_back("set-cookie", cookie + "; Path=/; HttpOnly");
  return r;
}

HttpResponse serviceContent() {
  return ok(
      R"(<RetrieveServiceContentResponse xmlns="urn:vim25"><returnval><rootFolder type="Folder">group-d1</rootFolder><propertyCollector type="PropertyCollector">propertyCollector</propertyCollector><sessionManager type="SessionManager">SessionManager</sessionManager><about><apiVersion>8.0.2.0</apiVersion></about></returnval></RetrieveServiceContentResponse>)");
}

TEST(SoapSession, LogsInOnceReusesTheCookieReloginsOnceAndLogsOut) {
  auto shared = std::make_shared<ScriptedTransport::Shared>();
  HttpResponse expired;
  expired.status = 500;
  expired.body = recorded("fault_not_authenticated.xml");
  shared->responses = {serviceContent(),
                       ok("<LoginResponse xmlns=\"urn:vim25\"/>", "vmware_soap_session=\"one\""),
                       ok("<FindByUuidResponse xmlns=\"urn:vim25\"/>"),
                       ok("<FindByUuidResponse xmlns=\"urn:vim25\"/>"),
                       expired,
                       serviceContent(),
                       ok("<LoginResponse xmlns=\"urn:vim25\"/>", "vmware_soap_session=\"two\""),
                       ok("<FindByUuidResponse xmlns=\"urn:vim25\"/>"),
                       ok("<LogoutResponse xmlns=\"urn:vim25\"/>")};
  {
    Credentials creds;
    creds.username = "u";
    creds.password = "secret-password";
    SoapClient client(std::make_unique<ScriptedTransport>(shared), Url::parse("https://vc/sdk"),
                      std::move(creds));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int i = 0; i < 3; ++i)
      (void)client.call("FindByUuid", {"SearchIndex", "SearchIndex"}, "", deadline);
    EXPECT_EQ(client.roundTrips(), 8u);
  }
  const auto& sent = shared->requests;
  ASSERT_EQ(sent.size(), 9u);
  auto header = [](const HttpRequest& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return std::string();
  };
  EXPECT_THAT(sent[1].body, HasSubstr("<password>secret-password</password>"));
  EXPECT_EQ(header(sent[1], "SOAPAction"), "urn:vim25/8.0.2.0");
  EXPECT_EQ(header(sent[2], "Cookie"), "vmware_soap_session=\"one\"");
  EXPECT_EQ(header(sent[3], "Cookie"), "vmware_soap_session=\"one\"");  // reused, no new login
  EXPECT_EQ(header(sent[7], "Cookie"), "vmware_soap_session=\"two\"");  // after one re-login
  EXPECT_THAT(sent[8].body, HasSubstr("<Logout"));
}

TEST(SoapSession, InvalidLoginIsNotRetried) {
  auto shared = std::make_shared<ScriptedTransport::Shared>();
  HttpResponse denied;
  denied.status = 500;
  denied.body = recorded("fault_invalid_login.xml");
  shared->responses = {serviceContent(), denied};
  Credentials creds;
  creds.username = "u";
  creds.password = "p";
  SoapClient client(std::make_unique<ScriptedTransport>(shared), Url::parse("https://vc/sdk"),
                    std::move(creds));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  try {
    client.connect(deadline);
    FAIL() << "login succeeded";
  } catch (const VimFault& f) {
    EXPECT_EQ(f.kind(), FaultKind::kInvalidLogin);
  }
  EXPECT_EQ(shared->requests.size(), 2u);
}

TEST(Endpoint, ParsesAndRejectsClearly) {
  Url u = Url::parse("https://vc.example.com/sdk");
  EXPECT_EQ(u.host, "vc.example.com");
  EXPECT_EQ(u.port, "443");
  EXPECT_EQ(u.path, "/sdk");
  EXPECT_EQ(Url::parse("https://[::1]:8989").port, "8989");
  EXPECT_EQ(Url::parse("https://[::1]:8989").path, "/sdk");
  EXPECT_THROW(Url::parse("vc.example.com"), std::invalid_argument);
  EXPECT_THROW(Url::parse("ftp://vc/sdk"), std::invalid_argument);
  EXPECT_THROW(Url::parse("https://user:pw@vc/sdk"), std::invalid_argument);
  EXPECT_THROW(Url::parse("https://vc:abc/sdk"), std::invalid_argument);
}

TEST(FailureDomains, NamesAreSlugsWithHashedSuffixWhenLong) {
  EXPECT_EQ(slugify("  DC0__C0 / Rack#1 "), "dc0-c0-rack-1");
  EXPECT_EQ(collisionSafeName({"vcsim", "DC0", "DC0_C0"}), "vcsim-dc0-dc0-c0");
  std::string a = collisionSafeName({"prov", std::string(80, 'a'), "c1"});
  std::string b = collisionSafeName({"prov", std::string(80, 'a'), "c2"});
  EXPECT_EQ(a.size(), 63u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.substr(0, 54), b.substr(0, 54));
}

Inventory twoClusters() {
  Inventory inv;
  inv.datacenters = {{{"Datacenter", "dc-1"}, "DC A", {"Folder", "f-1"}}};
  inv.storage_pods = {{{"StoragePod", "pod-1"}, "gold"}};
  inv.datastores = {{{"Datastore", "ds-1"}, "ds1", "DC A", {"StoragePod", "pod-1"}, 10, true},
                    {{"Datastore", "ds-2"}, "ds2", "DC A", {"StoragePod", "pod-1"}, 99, true},
                    {{"Datastore", "ds-3"}, "ds3", "DC A", {"Folder", "f-2"}, 5, false}};
  inv.networks = {{{"Network", "n-1"}, "VM Network", false},
                  {{"DistributedVirtualPortgroup", "dv-1"}, "prod", true}};
  inv.clusters = {{{"ClusterComputeResource", "c-1"},
                   "East",
                   "DC A",
                   {{"Datastore", "ds-1"}, {"Datastore", "ds-2"}},
                   {{"Network", "n-1"}},
                   {}},
                  {{"ClusterComputeResource", "c-2"},
                   "West",
                   "DC A",
                   {{"Datastore", "ds-3"}},
                   {{"DistributedVirtualPortgroup", "dv-1"}},
                   {}}};
  return inv;
}

ProviderSpec providerSpec(const std::string& spec) {
  auto doc = sdk::json::parse(R"({"metadata":{"name":"vc1"},"spec":)" + spec + "}", "provider");
  return ProviderSpec::parse(&doc);
}

TEST(FailureDomains, ClassesResolvePerZoneAndDatastoreClustersPickMostFreeSpace) {
  Inventory inv = twoClusters();
  ProviderSpec spec = providerSpec(
      R"({"capabilities":{"storageClasses":[{"name":"gold","target":{"datastoreCluster":"gold"}},)"
      R"({"name":"local","target":{"datastore":"ds3"},"perZone":[{"datacenter":"DC A","cluster":"East","target":{"datastore":"ds1"}}]}],)"
      R"("networkClasses":[{"name":"prod","target":{"distributedPortGroup":"prod"}},{"name":"vm","target":{"portGroup":"VM Network"}}]}})");
  auto fds = computeFailureDomains(inv, spec);
  ASSERT_EQ(fds.size(), 2u);
  EXPECT_EQ(fds[0].name, "vc1-dc-a-east");
  EXPECT_EQ(fds[0].storage_classes, (std::vector<std::string>{"gold", "local"}));
  EXPECT_EQ(fds[0].network_classes, (std::vector<std::string>{"vm"}));
  EXPECT_EQ(fds[1].name, "vc1-dc-a-west");
  EXPECT_TRUE(fds[1].storage_classes.empty());  // ds3 is not accessible
  EXPECT_EQ(fds[1].network_classes, (std::vector<std::string>{"prod"}));
  auto picked = inv.resolveDatastore(inv.clusters[0], "gold");
  ASSERT_TRUE(picked.has_value());
  EXPECT_EQ(picked->name, "ds2");
}

TEST(FailureDomains, DuplicateNamesFailClosed) {
  ProviderSpec spec = providerSpec(
      R"({"failureDomainNameOverrides":[{"datacenter":"DC A","cluster":"East","name":"Zone"},)"
      R"({"datacenter":"DC A","cluster":"West","name":"zone"}]})");
  try {
    (void)computeFailureDomains(twoClusters(), spec);
    FAIL() << "duplicate names accepted";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.reason(), "DuplicateFailureDomain");
    EXPECT_THAT(e.what(), HasSubstr("'zone'"));
  }
}

TEST(MachineSpecTest, GuestInfoCarriesNetworkUserDataAndMetadata) {
  auto doc = sdk::json::parse(
      R"({"template":"t","datacenter":"d","cluster":"c","datastore":"s","numCpus":1,"memoryMiB":512,)"
      R"("network":[{"portGroup":"p","ipam":{"static":{"address":"10.1.2.3","prefix":24,"nameservers":["1.1.1.1","8.8.8.8"]}}}],"userData":"hi"})",
      "spec");
  auto info = guestInfo(MachineSpec::parse(&doc), "web-0");
  EXPECT_EQ(info["guestinfo.network.ip"], "10.1.2.3");
  EXPECT_EQ(info["guestinfo.network.dns"], "1.1.1.1,8.8.8.8");
  EXPECT_EQ(info["guestinfo.userdata"], "aGk=");
  EXPECT_EQ(info["guestinfo.metadata"], base64("instance-id: web-0\nlocal-hostname: web-0\n"));
  EXPECT_EQ(info.count("guestinfo.network.gateway"), 0u);
}

// Cluster API's bootstrap data in Ignition (docs/adr/0050): where Ignition's vmware provider
// reads it, and not where cloud-init would take it for cloud-config.
TEST(MachineSpecTest, IgnitionUserDataGoesWhereIgnitionReadsIt) {
  auto doc = sdk::json::parse(
      R"({"template":"t","datacenter":"d","cluster":"c","datastore":"s","numCpus":1,"memoryMiB":512,)"
      R"("network":[{"portGroup":"p"}],"userData":"hi","userDataFormat":"ignition"})",
      "spec");
  auto info = guestInfo(MachineSpec::parse(&doc), "web-0");
  EXPECT_EQ(info["guestinfo.ignition.config.data"], "aGk=");
  EXPECT_EQ(info["guestinfo.ignition.config.data.encoding"], "base64");
  EXPECT_EQ(info.count("guestinfo.userdata"), 0u);
  auto other = sdk::json::parse(
      R"({"template":"t","datacenter":"d","cluster":"c","datastore":"s","numCpus":1,"memoryMiB":512,)"
      R"("network":[{"portGroup":"p"}],"userData":"hi","userDataFormat":"sysprep"})",
      "spec");
  try {
    (void)MachineSpec::parse(&other);
    FAIL() << "an unknown format was accepted";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.reason(), "UserDataFormatUnsupported");
  }
}

// A machine nobody placed (a Cluster API copy the controller has not adopted): said as such.
TEST(MachineSpecTest, AMissingPlaceIsPlacementUnresolved) {
  auto doc = sdk::json::parse(
      R"({"template":"t","cluster":"c","datastore":"s","numCpus":1,"memoryMiB":512,"network":[{"portGroup":"p"}]})",
      "spec");
  try {
    (void)MachineSpec::parse(&doc);
    FAIL();
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.reason(), "PlacementUnresolved");
    EXPECT_THAT(e.what(), HasSubstr("spec.datacenter"));
  }
}

TEST(MachineSpecTest, RejectsOutOfRangeFieldsByName) {
  auto doc = sdk::json::parse(
      R"({"template":"t","datacenter":"d","cluster":"c","datastore":"s","numCpus":999,"memoryMiB":512,"network":[{"portGroup":"p"}]})",
      "spec");
  try {
    (void)MachineSpec::parse(&doc);
    FAIL();
  } catch (const sdk::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("spec.numCpus"));
  }
}

// The install VM of an ISO import (spec.template): each NIC is the adapter model asked for
// (vmxnet3 when unset) with the PCI slot asked for (vSphere's choice when unset), and the disk
// hangs off the controller model asked for (pvscsi when unset).
std::string installVmXml(const std::string& template_json,
                         const std::vector<Inventory::Network>& networks) {
  auto image = sdk::json::parse(R"({"spec":{"osFamily":"linux","template":)" + template_json + "}}",
                                "image");
  TemplateSettings settings = templateSettings(&image);
  return installVmConfigXml(settings,
                            {"kairos", "LocalDS_0", "[LocalDS_0] banlieue-images/k.iso", networks});
}

struct InstallDevices {
  pugi::xml_document doc;
  std::vector<pugi::xml_node> devices;  // in deviceChange order
};

std::unique_ptr<InstallDevices> devicesOf(const std::string& config_xml) {
  auto out = std::make_unique<InstallDevices>();
  std::string wrapped =
      R"(<spec xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">)" + config_xml + "</spec>";
  EXPECT_TRUE(out->doc.load_string(wrapped.c_str())) << config_xml;
  for (pugi::xml_node change : children(child(out->doc.first_child(), "config"), "deviceChange")) {
    out->devices.push_back(child(change, "device"));
  }
  return out;
}

TEST(TemplateImportSpec, NicsAreTheAdapterAndPciSlotAsked) {
  const Inventory::Network vm_network{{"Network", "network-7"}, "VM Network", false, {}, {}};
  auto xml = installVmXml(
      R"({"network":[{"network":"VM Network","adapter":"e1000e","pciSlot":224},)"
      R"({"network":"VM Network"},{"network":"VM Network","adapter":"e1000","pciSlot":192}]})",
      {vm_network, vm_network, vm_network});
  auto parsed = devicesOf(xml);
  std::vector<pugi::xml_node> nics;
  for (pugi::xml_node d : parsed->devices) {
    if (child(d, "backing") && xsiType(child(d, "backing")).rfind("VirtualEthernetCard", 0) == 0) {
      nics.push_back(d);
    }
  }
  ASSERT_EQ(nics.size(), 3u) << xml;
  EXPECT_EQ(xsiType(nics[0]), "VirtualE1000e");
  EXPECT_EQ(xsiType(nics[1]), "VirtualVmxnet3");
  EXPECT_EQ(xsiType(nics[2]), "VirtualE1000");
  EXPECT_EQ(xsiType(child(nics[0], "slotInfo")), "VirtualDevicePciBusSlotInfo");
  EXPECT_EQ(childText(child(nics[0], "slotInfo"), "pciSlotNumber"), "224");
  EXPECT_FALSE(child(nics[1], "slotInfo")) << "no pciSlot: vSphere places the adapter";
  EXPECT_EQ(childText(child(nics[2], "slotInfo"), "pciSlotNumber"), "192");
  // vim25 sequences: slotInfo follows backing and precedes controllerKey/unitNumber.
  pugi::xml_node slot = child(nics[0], "slotInfo");
  EXPECT_EQ(localName(slot.previous_sibling().name()), "backing");
}

TEST(TemplateImportSpec, UnsupportedAdaptersAndControllersAreInvalidSpec) {
  auto rejected = [](const std::string& template_json) -> std::string {
    auto image = sdk::json::parse(R"({"spec":{"template":)" + template_json + "}}", "image");
    try {
      (void)templateSettings(&image);
    } catch (const sdk::Error& e) {
      EXPECT_EQ(e.code(), sdk::Code::kInvalidArgument);
      EXPECT_EQ(e.reason(), "InvalidSpec");
      return e.what();
    }
    return "accepted";
  };
  EXPECT_THAT(rejected(R"({"network":[{"network":"n"},{"network":"n","adapter":"rtl8139"}]})"),
              HasSubstr("spec.template.network[1].adapter"));
  EXPECT_THAT(rejected(R"({"network":[{"network":"n","adapter":"rtl8139"}]})"),
              HasSubstr("vmxnet3, vmxnet2, e1000 or e1000e"));
  EXPECT_THAT(rejected(R"({"network":[{"network":"n","pciSlot":-1}]})"),
              HasSubstr("spec.template.network[0].pciSlot"));
  // The CRD's values are all accepted where vSphere can run them: busLogic only with BIOS.
  EXPECT_THAT(rejected(R"({"disk":{"size":10,"controller":"busLogic"}})"),
              HasSubstr("busLogic needs firmware bios"));
  EXPECT_EQ(rejected(R"({"firmware":"bios","disk":{"size":10,"controller":"busLogic"},)"
                     R"("network":[{"network":"n","adapter":"vmxnet2"}]})"),
            "accepted");
  EXPECT_THAT(rejected(R"({"disk":{"size":10,"controller":"ide"}})"),
              HasSubstr("pvscsi, lsiLogic, lsiLogicSas, busLogic or nvme"));
  EXPECT_EQ(
      rejected(R"({"network":[{"network":"n","adapter":"e1000e"}],"disk":{"controller":"nvme"}})"),
      "accepted");
}

TEST(TemplateImportSpec, TheDiskHangsOffTheControllerAsked) {
  auto controller_of = [](const std::string& template_json) {
    auto parsed = devicesOf(installVmXml(template_json, {}));
    std::string controller_type;
    std::string controller_key;
    std::string disk_controller_key;
    for (pugi::xml_node d : parsed->devices) {
      if (xsiType(d) == "VirtualDisk") {
        disk_controller_key = childText(d, "controllerKey").value_or("");
      } else if (xsiType(d) != "VirtualCdrom" && !child(d, "backing")) {
        controller_type = xsiType(d);
        controller_key = childText(d, "key").value_or("");
      }
    }
    EXPECT_EQ(disk_controller_key, controller_key) << template_json;
    return controller_type;
  };
  EXPECT_EQ(controller_of(R"({"disk":{"size":10}})"), "ParaVirtualSCSIController");
  EXPECT_EQ(controller_of(R"({"disk":{"size":10,"controller":"pvscsi"}})"),
            "ParaVirtualSCSIController");
  EXPECT_EQ(controller_of(R"({"disk":{"size":10,"controller":"lsiLogic"}})"),
            "VirtualLsiLogicController");
  EXPECT_EQ(controller_of(R"({"disk":{"size":10,"controller":"lsiLogicSas"}})"),
            "VirtualLsiLogicSASController");
  EXPECT_EQ(controller_of(R"({"disk":{"size":10,"controller":"nvme"}})"), "VirtualNVMEController");
}

// AcquireTicket's VirtualMachineTicket: the URL is the ticket's own when vCenter gives one,
// else wss://<host>:<port>/ticket/<ticket>, with the vCenter's host when the ticket has none,
// 443 when it has no port, and an IPv6 host in brackets.
TEST(VimResponses, AWebMksTicketBecomesItsUrl) {
  auto parse = [](const std::string& xml) {
    static std::vector<std::unique_ptr<pugi::xml_document>> docs;
    docs.push_back(std::make_unique<pugi::xml_document>());
    docs.back()->load_string(xml.c_str());
    return parseVmTicket(docs.back()->first_child());
  };
  VmTicket t = parse(
      "<returnval><ticket>abc</ticket><cfgFile>[ds] v/v.vmx</cfgFile><host>esx-1.lab</host>"
      "<port>902</port><sslThumbprint>AA:BB</sslThumbprint></returnval>");
  EXPECT_EQ(t.ticket, "abc");
  EXPECT_EQ(t.port, 902);
  EXPECT_EQ(t.ssl_thumbprint, "AA:BB");
  EXPECT_EQ(webMksUrl(t, "vc.lab"), "wss://esx-1.lab:902/ticket/abc");
  EXPECT_EQ(webMksUrl(parse("<returnval><ticket>abc</ticket></returnval>"), "vc.lab"),
            "wss://vc.lab:443/ticket/abc");
  EXPECT_EQ(
      webMksUrl(parse("<returnval><ticket>abc</ticket><host>fd00::1</host></returnval>"), "vc.lab"),
      "wss://[fd00::1]:443/ticket/abc");
  EXPECT_EQ(webMksUrl(parse("<returnval><ticket>abc</ticket><host>esx-1</host>"
                            "<url>wss://esx-1.lab:443/ticket/abc</url></returnval>"),
                      "vc.lab"),
            "wss://esx-1.lab:443/ticket/abc");
  EXPECT_EQ(webMksUrl(parse("<returnval></returnval>"), "vc.lab"), "");
}

}  // namespace
}  // namespace banlieue::vsphere
