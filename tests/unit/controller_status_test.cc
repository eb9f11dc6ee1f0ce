// The status mirror's truth table (Ready from Scheduled, PlacementValid and the infra CR's
// Ready), what is copied from an infra CR, condition timestamps, and the infra CR builder.
#include "host/api/codec.h"
#include "host/roles/controller/image_ready.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/status_mirror.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;
using ::testing::HasSubstr;

const api::Condition& condition(const api::VirtualMachineStatus& status, const std::string& type) {
  const auto* found = findCondition(status.conditions, type);
  EXPECT_NE(found, nullptr) << type;
  static const api::Condition kMissing;
  return found != nullptr ? *found : kMissing;
}

struct TruthRow {
  const char* scheduled;    // Scheduled status, "" = absent
  const char* placement;    // PlacementValid status, "" = absent
  const char* infra_ready;  // infra CR Ready, "" = no condition, "-" = no infra CR
  const char* ready;        // expected Ready status
  const char* reason;       // expected Ready reason
};

class StatusTruthTableTest : public ::testing::TestWithParam<TruthRow> {};

TEST_P(StatusTruthTableTest, ReadyFollowsTheTable) {
  const auto& row = GetParam();
  api::VirtualMachineStatus status;
  if (*row.scheduled != '\0')
    setCondition(status.conditions, conditions::kScheduled, row.scheduled, "X", "", 1, "t0");
  if (*row.placement != '\0')
    setCondition(status.conditions, conditions::kPlacementValid, row.placement, "ProviderChanged",
                 "moving", 1, "t0");
  std::optional<InfraObservation> infra;
  if (std::string(row.infra_ready) != "-") {
    infra = InfraObservation{};
    if (*row.infra_ready != '\0')
      infra->ready = api::Condition{.type = "Ready", .status = row.infra_ready, .reason = "R"};
  }
  mirrorInfra(status, infra, 1, "t1");
  EXPECT_EQ(condition(status, "Ready").status, row.ready);
  EXPECT_EQ(condition(status, "Ready").reason, row.reason);
}

INSTANTIATE_TEST_SUITE_P(
    Table, StatusTruthTableTest,
    ::testing::Values(TruthRow{"True", "", "True", "True", "Reconciled"},
                      TruthRow{"True", "True", "True", "True", "Reconciled"},
                      TruthRow{"True", "False", "True", "False", "PlacementInvalid"},
                      TruthRow{"True", "True", "False", "False", "InfrastructureNotReady"},
                      TruthRow{"True", "True", "Unknown", "False", "InfrastructureNotReady"},
                      TruthRow{"True", "True", "", "False", "InfrastructureNotReady"},
                      TruthRow{"True", "True", "-", "False", "InfrastructureNotReady"},
                      TruthRow{"False", "True", "True", "False", "Scheduling"},
                      TruthRow{"", "", "True", "False", "Scheduling"},
                      TruthRow{"False", "False", "False", "False", "Scheduling"}));

TEST(StatusMirrorTest, CopiesTheInfraReportAndItsReadyCondition) {
  auto infra = json::parse(R"({"status":{
      "initialization":{"provisioned":true},
      "addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"Hostname"}],
      "observedPowerState":"PoweredOn",
      "tpmEndorsementCertificates":["PEM"],
      "conditions":[{"type":"Ready","status":"False","reason":"Cloning","message":"task 3"},
                    {"type":"GuestReady","status":"True","reason":"AgentUp"}]}})",
                           "infra");
  api::VirtualMachineStatus status;
  setCondition(status.conditions, conditions::kScheduled, "True", "Scheduled", "", 2, "t0");
  mirrorInfra(status, observeInfra(infra), 2, "t1");
  ASSERT_TRUE(status.initialization && status.initialization->provisioned);
  EXPECT_TRUE(*status.initialization->provisioned);
  ASSERT_EQ(status.addresses.size(), 1u);  // the malformed entry is dropped
  EXPECT_EQ(status.addresses[0].address, "10.0.0.5");
  EXPECT_EQ(status.observed_power_state, "PoweredOn");
  EXPECT_EQ(status.tpm_endorsement_certificates, std::vector<std::string>{"PEM"});
  const auto& infra_ready = condition(status, "InfrastructureReady");
  EXPECT_EQ(infra_ready.status, "False");
  EXPECT_EQ(infra_ready.reason, "Cloning");
  EXPECT_EQ(infra_ready.message, "task 3");
  EXPECT_EQ(infra_ready.observed_generation, 2);
  EXPECT_EQ(condition(status, "GuestReady").status, "True");
  // The top-level Ready says why the infrastructure is not ready, in the backend's words.
  EXPECT_EQ(condition(status, "Ready").reason, "InfrastructureNotReady");
  EXPECT_THAT(condition(status, "Ready").message, HasSubstr("(Cloning: task 3)"));

  // No infra CR any more: mirrored fields are cleared (initialization to provisioned=false),
  // GuestReady disappears.
  mirrorInfra(status, std::nullopt, 2, "t2");
  ASSERT_TRUE(status.initialization.has_value());  // kept, so an apply never nulls it
  EXPECT_EQ(status.initialization->provisioned, std::optional<bool>(false));
  EXPECT_TRUE(status.addresses.empty());
  EXPECT_EQ(findCondition(status.conditions, "GuestReady"), nullptr);
  EXPECT_EQ(condition(status, "InfrastructureReady").reason, "Pending");
}

// Issue #26: an object held back because it crashed or hung the plugin says so on the VM's own
// Ready, not only inside a message: `kubectl get vm` shows PluginCrashed / PluginHung.
TEST(StatusMirrorTest, APluginCrashOrHangIsTheVmsReadyReason) {
  for (const char* reason : {"PluginCrashed", "PluginHung"}) {
    api::VirtualMachineStatus status;
    setCondition(status.conditions, conditions::kScheduled, "True", "Scheduled", "", 3, "t0");
    InfraObservation infra;
    infra.ready = api::Condition{.type = "Ready",
                                 .status = "False",
                                 .reason = reason,
                                 .message = "quarantined after 3 crashes in a row"};
    mirrorInfra(status, infra, 3, "t1");
    EXPECT_EQ(condition(status, "InfrastructureReady").reason, reason);
    EXPECT_EQ(condition(status, "Ready").status, "False");
    EXPECT_EQ(condition(status, "Ready").reason, reason);
    EXPECT_THAT(condition(status, "Ready").message, HasSubstr("quarantined after 3 crashes"));
  }
}

// Issue #20: the answer to a restart request travels up to the VM, and stays there when a
// later machine (after a swap) has none: the request was answered.
TEST(StatusMirrorTest, TheLastRestartIsCopiedAndOutlivesItsMachine) {
  auto infra = json::parse(R"({"status":{"lastRestart":{"requestedAt":"r1",)"
                           R"("performedAt":"2026-12-03T08:00:00Z","outcome":"Restarted"}}})",
                           "infra");
  api::VirtualMachineStatus status;
  mirrorInfra(status, observeInfra(infra), 2, "t1");
  ASSERT_TRUE(status.last_restart.has_value());
  EXPECT_EQ(status.last_restart->requested_at, "r1");
  EXPECT_EQ(status.last_restart->performed_at, "2026-12-03T08:00:00Z");
  EXPECT_EQ(status.last_restart->outcome, "Restarted");
  mirrorInfra(status, observeInfra(json::parse(R"({"status":{}})", "infra")), 3, "t2");
  ASSERT_TRUE(status.last_restart.has_value());
  EXPECT_EQ(status.last_restart->requested_at, "r1");
  mirrorInfra(status, std::nullopt, 3, "t3");
  EXPECT_TRUE(status.last_restart.has_value());
}

TEST(StatusMirrorTest, TransitionTimeMovesOnlyWithTheStatus) {
  std::vector<api::Condition> list;
  setCondition(list, "Ready", "False", "A", "m1", 1, "t1");
  setCondition(list, "Ready", "False", "B", "m2", 2, "t2");
  EXPECT_EQ(list[0].last_transition_time, "t1");
  EXPECT_EQ(list[0].reason, "B");
  EXPECT_EQ(list[0].observed_generation, 2);
  setCondition(list, "Ready", "True", "C", "", 2, "t3");
  EXPECT_EQ(list[0].last_transition_time, "t3");
  removeCondition(list, "Ready");
  EXPECT_TRUE(list.empty());
}

class InfraBuilderTest : public ::testing::Test {
 protected:
  InfraBuilderTest() {
    vm_.metadata = {.name = "web-1", .namespace_ = "team", .uid = "uid-1"};
    vm_.metadata.labels = {{"app", "web"}};
    vm_.spec.desired_power_state = "PoweredOff";
    vm_.spec.hardware_override = api::HardwareOverride{.cpus = 4};
    vm_.spec.network_overrides = {
        {.name = "eth0", .static_ = {.address = "10.0.0.5", .prefix = 24}}};
    class_.metadata.name = "small";
    class_.spec.hardware = {.cpus = 2,
                            .memory_mib = 2048,
                            .disks = {{.name = "os", .size_gib = 10, .storage_class = "fast"},
                                      {.name = "data", .size_gib = 20, .storage_class = "fast"}}};
    class_.spec.network =
        api::ClassNetwork{.interfaces = {{.name = "eth0", .network_class = "lan"}}};
    image_.metadata.name = "debian";
    image_.status.per_provider = {{.provider_name = "p1",
                                   .provider_namespace = "team",
                                   .ready = true,
                                   .resolved_ref = "101"}};
    provider_.metadata = {.name = "p1", .namespace_ = "team"};
    provider_.spec.capabilities = api::ProviderCapabilities{};
    provider_.spec.capabilities->network_classes = {
        {.name = "lan",
         .target = {{"bridge", "br0"}},
         .subnet = api::Subnet{.gateway = "10.0.0.1", .nameservers = {"10.0.0.2"}}}};
    placement_ = {.provider_name = "p1",
                  .provider_namespace = "team",
                  .provider_class = "libvirt",
                  .failure_domain = "host-a",
                  .resolved_storage = {{"fast", "pool-a"}, {"fast", "pool-a"}},
                  .resolved_networks = {{"lan", "br0"}},
                  .failure_domain_raw = {{"node", "pve1"}}};
  }

  StatusOr<rapidjson::Document> build(const std::string& kind) {
    InfraBuildInput input{.vm = &vm_,
                          .vm_class = &class_,
                          .image = &image_,
                          .provider = &provider_,
                          .placement = &placement_,
                          .kind = {"infrastructure.banlieue.io/v1beta2", kind},
                          .user_data = UserDataReference{"web-1-user-data", "42"}};
    return buildInfraObject(input);
  }

  api::VirtualMachine vm_;
  api::VMClass class_;
  api::VMImage image_;
  api::Provider provider_;
  Placement placement_;
};

TEST_F(InfraBuilderTest, ContractFieldsOnEveryKind) {
  for (const char* kind : {"LibvirtMachine", "ProxmoxMachine", "AcmeMachine"}) {
    auto doc = build(kind);
    ASSERT_TRUE(doc.ok()) << kind << ": " << doc.status().message();
    const auto* d = &*doc;
    EXPECT_EQ(json::stringOr(d, "kind"), kind);
    EXPECT_EQ(json::stringOr(d, "metadata.name"), "web-1");
    EXPECT_EQ(json::stringOr(d, "metadata.namespace"), "team");
    const auto* labels = json::find(d, "metadata.labels");
    ASSERT_NE(labels, nullptr);
    EXPECT_STREQ((*labels)["banlieue.io/provider"].GetString(), "p1");
    EXPECT_STREQ((*labels)["banlieue.io/owned-by"].GetString(), "web-1");
    EXPECT_STREQ((*labels)["app"].GetString(), "web");
    const auto& owner = (*json::find(d, "metadata.ownerReferences"))[0];
    EXPECT_STREQ(owner["uid"].GetString(), "uid-1");
    EXPECT_TRUE(owner["controller"].GetBool());
    EXPECT_EQ(json::stringOr(d, "spec.providerRef.name"), "p1");
    EXPECT_EQ(json::stringOr(d, "spec.failureDomain"), "host-a");
    EXPECT_EQ(json::stringOr(d, "spec.desiredPowerState"), "PoweredOff");
    // userData by reference only: the text stays in its Secret (ADR 0026).
    EXPECT_EQ(json::find(d, "spec.userData"), nullptr);
    const auto& annotations = *json::find(d, "metadata.annotations");
    EXPECT_STREQ(annotations["banlieue.io/user-data-secret"].GetString(), "web-1-user-data");
    EXPECT_STREQ(annotations["banlieue.io/user-data-revision"].GetString(), "42");
    EXPECT_EQ(json::find(d, "spec.providerID"), nullptr) << "providerID belongs to the provider";
    EXPECT_EQ(json::find(d, "status"), nullptr);
  }
}

// Issue #20: a restart request reaches the machine (typed kinds and third-party ones) only
// while the VM's status has not recorded its answer, so a machine made after a swap does not
// restart for a request an earlier machine answered.
TEST_F(InfraBuilderTest, ARestartRequestTravelsOnlyWhileUnanswered) {
  vm_.spec.restart_requested_at = "2026-12-03T08:00:00.000Z";
  for (const char* kind : {"LibvirtMachine", "ProxmoxMachine", "AcmeMachine"}) {
    auto doc = build(kind);
    ASSERT_TRUE(doc.ok()) << kind << ": " << doc.status().message();
    EXPECT_EQ(json::stringOr(&*doc, "spec.restartRequestedAt"), "2026-12-03T08:00:00.000Z") << kind;
  }
  vm_.status.last_restart = api::RestartRecord{.requested_at = "2026-12-03T08:00:00.000Z"};
  for (const char* kind : {"LibvirtMachine", "ProxmoxMachine", "AcmeMachine"}) {
    auto doc = build(kind);
    ASSERT_TRUE(doc.ok()) << kind << ": " << doc.status().message();
    EXPECT_EQ(json::find(&*doc, "spec.restartRequestedAt"), nullptr) << kind;
  }
}

TEST_F(InfraBuilderTest, LibvirtSpec) {
  auto doc = build("LibvirtMachine");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(json::stringOr(&*doc, "spec.pool"), "pool-a");
  EXPECT_EQ(json::stringOr(&*doc, "spec.domainName"), "team-web-1");
  EXPECT_EQ(json::integer(&*doc, "spec.vcpus"), 4);  // override
  EXPECT_EQ(json::integer(&*doc, "spec.memoryMiB"), 2048);
  EXPECT_EQ(json::stringOr(&*doc, "spec.bootSource.volume"), "101");
  EXPECT_EQ(json::stringOr(&*doc, "spec.bootSource.kind"), "backingVolume");
  const auto& nic = (*json::find(&*doc, "spec.network"))[0];
  EXPECT_STREQ(nic["source"]["kind"].GetString(), "bridge");
  EXPECT_STREQ(nic["source"]["name"].GetString(), "br0");
  EXPECT_STREQ(nic["ipam"]["static"]["address"].GetString(), "10.0.0.5");
  EXPECT_STREQ(nic["ipam"]["static"]["gateway"].GetString(), "10.0.0.1");  // from the subnet
}

// A VM placed on host-a with its root disk on pool-a boots from the image's row for host-a's
// pool-a (docs/adr/0053); without such a row, from a Ready row of host-a.
TEST_F(InfraBuilderTest, TheImageRefComesFromTheRowOfTheVmsFailureDomainAndPool) {
  auto& row = image_.status.per_provider[0];
  row.resolved_ref.clear();
  row.zones = {{.name = "host-b/pool-a",
                .failure_domain = "host-b",
                .target = "pool-a",
                .ready = true,
                .resolved_ref = "ref-b-a"},
               {.name = "host-a/pool-b",
                .failure_domain = "host-a",
                .target = "pool-b",
                .ready = true,
                .resolved_ref = "ref-a-b"},
               {.name = "host-a/pool-a",
                .failure_domain = "host-a",
                .target = "pool-a",
                .ready = true,
                .resolved_ref = "ref-a-a"}};
  auto doc = build("LibvirtMachine");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(json::stringOr(&*doc, "spec.pool"), "pool-a");
  EXPECT_EQ(json::stringOr(&*doc, "spec.bootSource.volume"), "ref-a-a");

  row.zones.pop_back();  // no row for host-a's pool-a: a Ready row of host-a
  doc = build("LibvirtMachine");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(json::stringOr(&*doc, "spec.bootSource.volume"), "ref-a-b");

  row.zones.pop_back();  // nothing for host-a
  EXPECT_THAT(build("LibvirtMachine").status().message(),
              HasSubstr("VMImage debian has no resolvedRef for provider p1 (zone host-a)"));
}

TEST_F(InfraBuilderTest, ProxmoxAndVSphereNeedTheirZoneAttributes) {
  auto proxmox = build("ProxmoxMachine");
  ASSERT_TRUE(proxmox.ok()) << proxmox.status().message();
  EXPECT_EQ(json::stringOr(&*proxmox, "spec.node"), "pve1");
  EXPECT_EQ(json::integer(&*proxmox, "spec.templateVmid"), 101);
  EXPECT_EQ(json::integer(&*proxmox, "spec.osDiskSizeGiB"), 10);
  EXPECT_EQ(json::find(&*proxmox, "spec.dataDisks")->Size(), 1u);

  auto vsphere = build("VSphereMachine");
  ASSERT_FALSE(vsphere.ok());
  EXPECT_EQ(vsphere.status().reason(), "InfraBuildFailed");
  EXPECT_EQ(vsphere.status().message(), "failure domain host-a missing raw attribute 'datacenter'");
  placement_.failure_domain_raw = {{"datacenter", "dc1"}, {"cluster", "c1"}};
  vsphere = build("VSphereMachine");
  ASSERT_TRUE(vsphere.ok()) << vsphere.status().message();
  EXPECT_EQ(json::stringOr(&*vsphere, "spec.template"), "101");
  EXPECT_EQ(json::stringOr(&*vsphere, "spec.datastore"), "pool-a");

  image_.status.per_provider[0].resolved_ref = "not-a-vmid";
  placement_.failure_domain_raw = {{"node", "pve1"}};
  EXPECT_THAT(build("ProxmoxMachine").status().message(), HasSubstr("is not a Proxmox VMID"));
  image_.status.per_provider.clear();
  EXPECT_THAT(build("LibvirtMachine").status().message(),
              HasSubstr("VMImage debian has no resolvedRef for provider p1"));
}

TEST_F(InfraBuilderTest, StaticAndPoolTogetherIsRefused) {
  class_.spec.network->interfaces[0].ipam.static_ = api::StaticNetworkShape{};
  class_.spec.network->interfaces[0].ipam.pool = api::IpamPoolRef{};
  auto doc = build("LibvirtMachine");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().message(), "VMClass small interface eth0: ipam sets both static and pool");
}

TEST_F(InfraBuilderTest, UpToDateNeedsTheSameHashAndEveryDesiredField) {
  auto desired = build("LibvirtMachine");
  ASSERT_TRUE(desired.ok());
  rapidjson::Document live;
  live.CopyFrom(*desired, live.GetAllocator());
  EXPECT_TRUE(infraUpToDate(*desired, live));
  // Fields others write (providerID, status, server defaults) do not matter.
  live["spec"].AddMember("providerID", "libvirt://x", live.GetAllocator());
  live.AddMember("status", rapidjson::Value(rapidjson::kObjectType), live.GetAllocator());
  EXPECT_TRUE(infraUpToDate(*desired, live));
  // A changed field (power) is noticed.
  vm_.spec.desired_power_state = "PoweredOn";
  auto changed = build("LibvirtMachine");
  EXPECT_FALSE(infraUpToDate(*changed, live));
  // A removed field keeps the live object a superset, but the hash differs.
  vm_.spec.desired_power_state = "PoweredOff";
  InfraBuildInput input{.vm = &vm_,
                        .vm_class = &class_,
                        .image = &image_,
                        .provider = &provider_,
                        .placement = &placement_,
                        .kind = {"infrastructure.banlieue.io/v1beta2", "LibvirtMachine"}};
  auto without_user_data = buildInfraObject(input);
  ASSERT_TRUE(without_user_data.ok());
  EXPECT_TRUE(jsonContains(live["spec"], (*without_user_data)["spec"]));
  EXPECT_FALSE(infraUpToDate(*without_user_data, live));
}

// Issue #23 (docs/adr/0056): a new infra object carries its provider's finalizer, so the
// provider need not write it. It is outside the applied hash: objects made before it are not
// re-applied for it, and a finalizer the provider wrote itself is no reason to apply.
TEST_F(InfraBuilderTest, TheProvidersFinalizerRidesOnTheCreateOutsideTheHash) {
  auto plain = build("AcmeMachine");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(json::find(&*plain, "metadata.finalizers"), nullptr);
  InfraBuildInput input{.vm = &vm_,
                        .vm_class = &class_,
                        .image = &image_,
                        .provider = &provider_,
                        .placement = &placement_,
                        .kind = {"infrastructure.banlieue.io/v1beta2", "AcmeMachine"},
                        .user_data = UserDataReference{"web-1-user-data", "42"},
                        .finalizers = {"banlieue.io/provider-acme"}};
  auto with = buildInfraObject(input);
  ASSERT_TRUE(with.ok());
  const auto* finalizers = json::find(&*with, "metadata.finalizers");
  ASSERT_NE(finalizers, nullptr);
  ASSERT_TRUE(finalizers->IsArray());
  ASSERT_EQ(finalizers->Size(), 1U);
  EXPECT_STREQ((*finalizers)[0].GetString(), "banlieue.io/provider-acme");
  auto hash = [](const rapidjson::Value& d) {
    return std::string(
        (*json::find(&d, "metadata.annotations"))[kAppliedHashAnnotation].GetString());
  };
  EXPECT_EQ(hash(*with), hash(*plain));
  EXPECT_TRUE(infraUpToDate(*with, *plain));
  EXPECT_TRUE(infraUpToDate(*plain, *with));
}

TEST(InfraFinalizersTest, TheClassesOnCreateAndOnlyTheLiveObjectsProviderFinalizersAfter) {
  auto doc = [](const char* text) {
    auto d = std::make_unique<rapidjson::Document>();
    d->Parse(text);
    return d;
  };
  auto published = doc(
      R"({"status":{"plugin":{"name":"acme","machineFinalizer":"banlieue.io/provider-acme"}}})");
  EXPECT_EQ(infraFinalizers(published.get(), nullptr),
            std::vector<std::string>{"banlieue.io/provider-acme"});
  // A class whose pods predate the field, no class, or a name that is not a provider's.
  auto older = doc(R"({"status":{"plugin":{"name":"acme"}}})");
  EXPECT_TRUE(infraFinalizers(older.get(), nullptr).empty());
  EXPECT_TRUE(infraFinalizers(nullptr, nullptr).empty());
  auto foreign = doc(R"({"status":{"plugin":{"machineFinalizer":"example.com/hold"}}})");
  EXPECT_TRUE(infraFinalizers(foreign.get(), nullptr).empty());
  auto bare = doc(R"({"status":{"plugin":{"machineFinalizer":"banlieue.io/provider-"}}})");
  EXPECT_TRUE(infraFinalizers(bare.get(), nullptr).empty());

  // After the create: exactly the provider finalizers the object has, whatever the class says
  // now (a later apply that dropped one it once applied would remove it).
  auto live = doc(R"({"metadata":{"finalizers":["example.com/hold","banlieue.io/provider-old",)"
                  R"("banlieue.io/provider-acme"]}})");
  EXPECT_EQ(infraFinalizers(published.get(), live.get()),
            (std::vector<std::string>{"banlieue.io/provider-old", "banlieue.io/provider-acme"}));
  auto released = doc(R"({"metadata":{"finalizers":["example.com/hold"]}})");
  EXPECT_TRUE(infraFinalizers(published.get(), released.get()).empty())
      << "never one the live object lacks: it may be going";
  auto none = doc(R"({"metadata":{}})");
  EXPECT_TRUE(infraFinalizers(published.get(), none.get()).empty());
}

TEST(ImageReadyTest, ReadyWhenEveryExistingProvidersRowIsReady) {
  api::VMImage image;
  image.metadata.generation = 3;
  std::set<std::string> providers = {"team/p1", "team/p2"};
  auto exists = [&](const std::string& ns, const std::string& name) {
    return providers.count(ns + "/" + name) > 0;
  };
  auto ready = imageReadyCondition(image, exists);
  EXPECT_EQ(ready.status, "False");
  EXPECT_EQ(ready.reason, "NoProviderRows");

  image.status.per_provider = {
      {.provider_name = "p1", .provider_namespace = "team", .ready = true},
      {.provider_name = "p2", .provider_namespace = "team", .ready = false, .reason = "Importing"},
      {.provider_name = "gone", .provider_namespace = "team", .ready = false}};
  ready = imageReadyCondition(image, exists);
  EXPECT_EQ(ready.status, "False");
  EXPECT_EQ(ready.reason, "ProvidersNotReady");
  EXPECT_EQ(ready.message, "not ready on team/p2 (Importing)");
  EXPECT_EQ(ready.observed_generation, 3);

  image.status.per_provider[1].ready = true;
  ready = imageReadyCondition(image, exists);
  EXPECT_EQ(ready.status, "True");  // the deleted Provider's stale row does not block
  EXPECT_EQ(ready.message, "ready on 2 provider(s)");
  providers.insert("team/gone");
  EXPECT_EQ(imageReadyCondition(image, exists).status, "False");
}

}  // namespace
}  // namespace banlieue::controller
