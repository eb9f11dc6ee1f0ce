// The banlieue controller against the real local apiserver (controller_vm_fixture.h): the
// create path's writes are counted and steady state is checked to write nothing; swaps,
// migration, recovery, pools and their claims, and cluster aggregation.
#include "tests/integration/controller_vm_fixture.h"

#include "host/common/base64.h"

#include <gmock/gmock.h>

namespace banlieue::controller {
namespace {

using namespace std::chrono_literals;

TEST_F(ControllerVmTest, CreateBecomesReadyPowerFlowsSteadyStateIsSilentDeleteLeavesNothing) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/images/debian.qcow2"}});
  apply(
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  user-data: "
      "'hostname: ${VM_NAME} ${OTHER}'\n");
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: web\n  "
      "labels: {app: web}\nspec:\n  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ +
      "-img}\n  userData: {configMapRef: {name: seed}}\n");

  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "web") != nullptr; }))
      << condition("web", "Ready", "message");
  auto machine = get(kLibvirtMachine, "web");
  EXPECT_EQ(json::stringOr(machine.get(), "spec.providerRef.name"), "p1");
  EXPECT_EQ(json::stringOr(machine.get(), "spec.failureDomain"), "fd-p1");
  // The rendered userData is in the VM's own Secret; the infra object only names it (ADR 0026).
  EXPECT_EQ(json::find(machine.get(), "spec.userData"), nullptr);
  const auto* annotations = json::find(machine.get(), "metadata.annotations");
  ASSERT_NE(annotations, nullptr);
  ASSERT_TRUE(annotations->HasMember("banlieue.io/user-data-secret"));
  EXPECT_STREQ((*annotations)["banlieue.io/user-data-secret"].GetString(), "web-rendered-userdata");
  auto rendered = client_->get(kube::resources::kSecret, ns_.name(), "web-rendered-userdata");
  ASSERT_TRUE(rendered.ok()) << rendered.status().message();
  EXPECT_STREQ((*annotations)["banlieue.io/user-data-revision"].GetString(),
               json::stringOr(&*rendered, "metadata.resourceVersion").c_str());
  EXPECT_EQ(json::stringOr(&*rendered, "type"), "banlieue.io/rendered-user-data");
  EXPECT_EQ(common::decodeBase64(json::stringOr(&*rendered, "data.userData")),
            "hostname: web ${OTHER}");
  EXPECT_EQ(json::stringOr(runtime::controllerReference(*rendered), "uid"),
            json::stringOr(get(resources::kVirtualMachine, "web").get(), "metadata.uid"));
  EXPECT_EQ(json::stringOr(machine.get(), "spec.bootSource.volume"), "/images/debian.qcow2");
  const auto* labels = json::find(machine.get(), "metadata.labels");
  ASSERT_NE(labels, nullptr);
  EXPECT_STREQ((*labels)["banlieue.io/provider"].GetString(), "p1");
  EXPECT_STREQ((*labels)["banlieue.io/owned-by"].GetString(), "web");
  EXPECT_STREQ((*labels)["app"].GetString(), "web");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return condition("web", "Scheduled") == "True" &&
           condition("web", "Ready", "reason") == "InfrastructureNotReady";
  })) << condition("web", "Ready", "message");

  provide(kLibvirtMachine, "web");
  ASSERT_TRUE(LocalCluster::eventually([&] { return condition("web", "Ready") == "True"; }))
      << condition("web", "Ready", "message");
  auto vm = get(resources::kVirtualMachine, "web");
  EXPECT_EQ(json::stringOr(vm.get(), "status.scheduled.providerName"), "p1");
  EXPECT_EQ(json::stringOr(vm.get(), "status.infrastructureRef.kind"), "LibvirtMachine");
  EXPECT_EQ(json::stringOr(vm.get(), "status.observedPowerState"), "PoweredOn");
  EXPECT_STREQ((*json::find(vm.get(), "status.addresses"))[0]["address"].GetString(), "192.0.2.10");
  EXPECT_EQ(json::integer(vm.get(), "status.observedGeneration"),
            json::integer(vm.get(), "metadata.generation"));

  // The image's top-level Ready, aggregated from its (one) Provider row.
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto image = client_->get(resources::kVMImage, "", prefix_ + "-img");
    if (!image.ok()) return false;
    const auto* list = json::find(&*image, "status.conditions");
    return list != nullptr && list->IsArray() && list->Size() == 1 &&
           json::stringOr(&(*list)[0], "status") == "True";
  }));

  int create_writes = counting_->objectWrites(ns_.name(), "web");
  std::cout << "controller writes for one VM from create to Ready: " << create_writes
            << " (events: " << counting_->eventWrites() << "; " << counting_->describe() << ")"
            << std::endl;
  EXPECT_LE(create_writes, 4);
  // Issue #23: creating the infra object costs no read, and the success path tells its story
  // with one Event on the VM, when it turns Ready (docs/adr/0047).
  EXPECT_EQ(counting_->objectReads(ns_.name(), "web"), 0);
  const std::string ready_event =
      "Normal/Ready: the machine is ready on Provider p1 in failure domain fd-p1 "
      "(LibvirtMachine web)\n";
  testing::CommandResult events;
  LocalCluster::eventually([&] {
    events = cluster_.kubectl("get events -n " + ns_.name() +
                              " --field-selector involvedObject.kind=VirtualMachine,"
                              "involvedObject.name=web -o jsonpath='{range .items[*]}{.type}/"
                              "{.reason}: {.message}{\"\\n\"}{end}'");
    return events.output == ready_event;
  });
  EXPECT_EQ(events.output, ready_event);

  // Steady state: more reconciles of a converged VM write nothing.
  int before = counting_->total();
  reconcileAndWait("web");
  EXPECT_EQ(counting_->total(), before) << counting_->describe();

  // Power flows to the infra CR.
  ASSERT_EQ(cluster_
                .kubectl("patch bvm web -n " + ns_.name() +
                         " --type merge -p '{\"spec\":{\"desiredPowerState\":\"PoweredOff\"}}'")
                .exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto m = get(kLibvirtMachine, "web");
    return m && json::stringOr(m.get(), "spec.desiredPowerState") == "PoweredOff";
  }));

  // Delete waits for the infra CR (and so the backend VM) to go.
  ASSERT_EQ(cluster_.kubectl("delete bvm web --wait=false -n " + ns_.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "web"); }));
  // A reconcile that reads the terminating infra CR (the delete path reads it live) keeps the VM.
  reconcileAndWait("web");
  EXPECT_NE(get(resources::kVirtualMachine, "web"), nullptr) << "the VM must outlive its infra CR";
  releaseProviderFinalizer(kLibvirtMachine, "web");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return get(resources::kVirtualMachine, "web") == nullptr &&
           get(kLibvirtMachine, "web") == nullptr;
  }));
}

// Issue #23 (docs/adr/0056): when the class publishes its provider's finalizer, the controller
// creates the infra object carrying it, so the provider has no finalizer of its own to write
// before its first backend call; every later apply keeps it, and deletion still waits for it.
TEST_F(ControllerVmTest, ThePublishedProviderFinalizerIsOnTheInfraObjectFromItsCreate) {
  const std::string finalizer = "banlieue.io/provider-test";
  providerClass(prefix_ + "-lv", "LibvirtMachine", finalizer);
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/images/debian.qcow2"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: web\n"
      "spec:\n  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ + "-img}\n");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "web") != nullptr; }))
      << condition("web", "Ready", "message");
  auto finalizers = [&] {
    return cluster_
        .kubectl("get libvirtmachine web -n " + ns_.name() +
                 " -o jsonpath='{.metadata.finalizers}'")
        .output;
  };
  auto managers = [&] {
    return cluster_
        .kubectl("get libvirtmachine web -n " + ns_.name() +
                 " -o jsonpath='{range .metadata.managedFields[*]}{.manager}/{.operation} {end}'")
        .output;
  };
  // Nobody but the controller has written the object: the finalizer came with its create.
  EXPECT_EQ(finalizers(), R"(["banlieue.io/provider-test"])");
  EXPECT_EQ(managers(), "banlieue.io/controller/Apply ");
  const int create_writes = counting_->objectWrites(ns_.name(), "web");

  // A change that re-applies the object keeps the finalizer (an apply leaving it out would
  // remove it: this manager applied it).
  ASSERT_EQ(cluster_.kubectl("label bvm web tier=db -n " + ns_.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto m = get(kLibvirtMachine, "web");
    return m && json::stringOr(m.get(), "metadata.labels.tier") == "db";
  }));
  EXPECT_EQ(finalizers(), R"(["banlieue.io/provider-test"])");

  provideStatus(kLibvirtMachine, "web");
  ASSERT_TRUE(LocalCluster::eventually([&] { return condition("web", "Ready") == "True"; }))
      << condition("web", "Ready", "message");
  EXPECT_EQ(finalizers(), R"(["banlieue.io/provider-test"])");
  EXPECT_LE(counting_->objectWrites(ns_.name(), "web"), create_writes + 2)
      << "the label's apply and the Ready status; " << counting_->describe();

  // Deletion waits for the provider to release it.
  ASSERT_EQ(cluster_.kubectl("delete bvm web --wait=false -n " + ns_.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "web"); }));
  reconcileAndWait("web");
  EXPECT_NE(get(resources::kVirtualMachine, "web"), nullptr) << "the VM must outlive its infra CR";
  EXPECT_EQ(finalizers(), R"(["banlieue.io/provider-test"])");
  releaseProviderFinalizer(kLibvirtMachine, "web");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return get(resources::kVirtualMachine, "web") == nullptr &&
           get(kLibvirtMachine, "web") == nullptr;
  }));
}

TEST_F(ControllerVmTest, BackendSwapConvergesWithinAKindAndAcrossKinds) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  providerClass(prefix_ + "-px", "ProxmoxMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p2", prefix_ + "-lv", "{site: two}");
  provider("p3", prefix_ + "-px", "{site: three}", R"({"node":"pve1"})");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}, {"p2", "/img/b"}, {"p3", "9000"}});
  auto place = [&](const std::string& site) { return placeOn("db", site); };
  virtualMachine("db", "site: one");
  provisionLibvirt("db");

  // Same kind, other Provider: the old CR goes first (its provider removes the backend VM).
  ASSERT_EQ(place("two").exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "db"); }));
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return condition("db", "PlacementValid", "reason") == "ProviderChanged" &&
           condition("db", "Ready") == "False";
  }));
  releaseProviderFinalizer(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto m = get(kLibvirtMachine, "db");
    return m && json::stringOr(m.get(), "spec.providerRef.name") == "p2" &&
           json::stringOr(m.get(), "metadata.deletionTimestamp").empty();
  }));
  provide(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto vm = get(resources::kVirtualMachine, "db");
    return condition("db", "Ready") == "True" && condition("db", "PlacementValid") == "True" &&
           json::stringOr(vm.get(), "status.scheduled.providerName") == "p2";
  })) << condition("db", "Ready", "message");

  // Another kind: the LibvirtMachine goes, a ProxmoxMachine replaces it.
  ASSERT_EQ(place("three").exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "db"); }));
  EXPECT_EQ(get(kProxmoxMachine, "db"), nullptr) << "created before the old one was gone";
  releaseProviderFinalizer(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kProxmoxMachine, "db") != nullptr; }));
  EXPECT_EQ(get(kLibvirtMachine, "db"), nullptr);
  auto proxmox = get(kProxmoxMachine, "db");
  EXPECT_EQ(json::stringOr(proxmox.get(), "spec.node"), "pve1");
  EXPECT_EQ(json::integer(proxmox.get(), "spec.templateVmid"), 9000);
  provide(kProxmoxMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto vm = get(resources::kVirtualMachine, "db");
    return condition("db", "Ready") == "True" &&
           json::stringOr(vm.get(), "status.infrastructureRef.kind") == "ProxmoxMachine" &&
           json::stringOr(vm.get(), "status.scheduled.providerName") == "p3";
  })) << condition("db", "Ready", "message");
}

TEST_F(ControllerVmTest, ManualMigrationWaitsForTheAnnotation) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p2", prefix_ + "-lv", "{site: two}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}, {"p2", "/img/b"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: app\nspec:\n"
      "  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ +
      "-img}\n  migrationPolicy: manual\n  placement: {providerSelector: {matchLabels: {site: "
      "one}}}\n");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "app") != nullptr; }));
  provide(kLibvirtMachine, "app");
  ASSERT_TRUE(LocalCluster::eventually([&] { return condition("app", "Ready") == "True"; }));

  ASSERT_EQ(cluster_
                .kubectl("patch bvm app -n " + ns_.name() +
                         " --type merge -p '{\"spec\":{\"placement\":{\"providerSelector\":{"
                         "\"matchLabels\":{\"site\":\"two\"}}}}}'")
                .exit_code,
            0);
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("app", "PlacementValid", "reason") == "ProviderChanged" &&
           condition("app", "Ready", "reason") == "PlacementInvalid";
  }));
  EXPECT_FALSE(terminating(kLibvirtMachine, "app")) << "manual policy moved without the annotation";

  ASSERT_EQ(
      cluster_.kubectl("annotate bvm app banlieue.io/migrate=true -n " + ns_.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "app"); }));
  releaseProviderFinalizer(kLibvirtMachine, "app");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto m = get(kLibvirtMachine, "app");
    return m && json::stringOr(m.get(), "spec.providerRef.name") == "p2";
  }));
}

// A class that publishes a kind this controller may not read (a third party's pods published
// before its ClusterRoles were applied, or they never were) holds up no other VM: the
// controller cannot have made objects of a kind it may not even read. A VM placed on that
// class says why, and deleting the others completes (found by CI: every VM of the cluster
// waited for that kind's cache, and their deletion for a list it was refused).
TEST_F(ControllerVmTest, AKindTheControllerMayNotReadHoldsUpNoOtherVm) {
  counting_->deny("proxmoxmachines");
  providerClass(prefix_ + "-denied", "ProxmoxMachine");
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p2", prefix_ + "-denied", "{site: two}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/images/debian.qcow2"}, {"p2", "/images/debian.qcow2"}});
  virtualMachine("web", "site: one");
  provisionLibvirt("web");

  virtualMachine("locked", "site: two");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("locked", "Scheduled", "reason") == "InfraBuildFailed";
  })) << condition("locked", "Scheduled", "message");
  EXPECT_NE(condition("locked", "Scheduled", "message").find("may not"), std::string::npos)
      << condition("locked", "Scheduled", "message");

  // Deleting both completes: nothing waits on the kind the controller may not read.
  ASSERT_EQ(cluster_.kubectl("delete bvm web locked --wait=false -n " + ns_.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "web"); }))
      << condition("web", "Ready", "message");
  releaseProviderFinalizer(kLibvirtMachine, "web");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return get(resources::kVirtualMachine, "web") == nullptr &&
           get(resources::kVirtualMachine, "locked") == nullptr;
  })) << condition("web", "Ready", "message")
      << " / " << condition("locked", "Ready", "message");
}

TEST_F(ControllerVmTest, MissingClassAndUnpublishedKindRecoverWhenTheyAppear) {
  apply("apiVersion: banlieue.io/v1alpha1\nkind: ProviderClass\nmetadata:\n  name: " + prefix_ +
        "-late\n  labels: {banlieue-test: " + prefix_ +
        "}\nspec:\n  backend: test\n  deployment: External\n");
  provider("p1", prefix_ + "-late", "{site: one}");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  name: late\nspec:\n"
      "  classRef: {name: " +
      prefix_ + "-small}\n  imageRef: {name: " + prefix_ + "-img}\n");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("late", "Ready", "reason") == "ClassNotFound";
  })) << condition("late", "Ready", "reason");
  EXPECT_EQ(condition("late", "Ready"), "False");
  EXPECT_EQ(condition("late", "Ready", "message"), "VMClass " + prefix_ + "-small not found");

  vmClass(prefix_ + "-small");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("late", "Scheduled", "reason") == "InfraBuildFailed";
  })) << condition("late", "Scheduled", "reason");
  EXPECT_NE(condition("late", "Scheduled", "message").find("has not published status.machineKind"),
            std::string::npos);

  patchStatus(
      resources::kProviderClass, "", prefix_ + "-late",
      R"({"machineKind":{"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":"LibvirtMachine"}})");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kLibvirtMachine, "late") != nullptr; }));
  EXPECT_TRUE(LocalCluster::eventually([&] { return condition("late", "Scheduled") == "True"; }));
}

TEST_F(ControllerVmTest, PoolOfSixSpreadsTwoTwoTwoOverThreeFailureDomainsAndScalesDown) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  std::string fds;
  for (const char* zone : {"a", "b", "c"}) {
    fds +=
        std::string(fds.empty() ? "" : ",") + R"({"name":"fd-)" + zone + R"(","labels":{"zone":")" +
        zone +
        R"("},"attributes":{"availableStorageClasses":["fast"],"availableNetworkClasses":["lan"]}})";
  }
  patchStatus(resources::kProvider, ns_.name(), "p1", R"({"failureDomains":[)" + fds + "]}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachinePool\nmetadata:\n  name: web\n"
      "spec:\n  warmReplicas: 6\n  readiness: InfrastructureReady\n  template:\n"
      "    labels: {app: web}\n    spec:\n      classRef: {name: " +
      prefix_ + "-small}\n      imageRef: {name: " + prefix_ +
      "-img}\n      placement:\n        antiAffinity:\n        - topologyKey: zone\n"
      "          mode: preferred\n          labelSelector: {matchLabels: {banlieue.io/pool: "
      "web}}\n");

  // Play the provider for every member as it appears (maxSurge bounds members in flight).
  auto machines = [&] {
    std::map<std::string, std::string> placed;  // name -> failure domain
    auto list = client_->list(kLibvirtMachine, ns_.name());
    if (!list.ok()) return placed;
    for (const auto& item : (*list)["items"].GetArray()) {
      if (!json::stringOr(&item, "metadata.deletionTimestamp").empty()) continue;
      std::string name = json::stringOr(&item, "metadata.name");
      placed[name] = json::stringOr(&item, "spec.failureDomain");
      if (json::find(&item, "status.conditions") == nullptr) provide(kLibvirtMachine, name);
    }
    return placed;
  };
  auto pool_status = [&](const char* field) {
    auto pool = client_->get(resources::kVirtualMachinePool, ns_.name(), "web");
    // Zero counts are left out of the status.
    return pool.ok() ? json::integer(&*pool, std::string("status.") + field).value_or(0) : -1;
  };
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return machines().size() == 6 && pool_status("available") == 6; }, 90s))
      << "members: " << machines().size() << ", available: " << pool_status("available");
  std::map<std::string, int> per_domain;
  for (const auto& [name, fd] : machines()) ++per_domain[fd];
  EXPECT_EQ(per_domain, (std::map<std::string, int>{{"fd-a", 2}, {"fd-b", 2}, {"fd-c", 2}}));
  EXPECT_EQ(pool_status("replicas"), 6);
  EXPECT_EQ(pool_status("provisioning"), 0);

  ASSERT_EQ(cluster_
                .kubectl("patch bvmpool web -n " + ns_.name() +
                         " --type merge -p '{\"spec\":{\"warmReplicas\":3}}'")
                .exit_code,
            0);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        auto list = client_->list(kLibvirtMachine, ns_.name());
        if (list.ok()) {
          for (const auto& item : (*list)["items"].GetArray()) {
            if (!json::stringOr(&item, "metadata.deletionTimestamp").empty())
              releaseProviderFinalizer(kLibvirtMachine, json::stringOr(&item, "metadata.name"));
          }
        }
        return pool_status("replicas") == 3 && machines().size() == 3;
      },
      60s))
      << "replicas: " << pool_status("replicas");
}

// Claims (issue #20): each takes one available member, never one another claim has; the pool
// refills; a missing pool and an empty one say so; the garbage collector takes a released
// member; a member lost is never replaced.
TEST_F(ControllerVmTest, ClaimsBindOneAvailableMemberEachAndReleaseItThroughTheCollector) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  apply(
      "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachinePool\nmetadata:\n  name: web\n"
      "spec:\n  warmReplicas: 2\n  readiness: InfrastructureReady\n  template:\n"
      "    spec:\n      classRef: {name: " +
      prefix_ + "-small}\n      imageRef: {name: " + prefix_ + "-img}\n");

  // The provider's part: new machines come up (unless held back), deleted ones go.
  bool provide_new = true;
  auto play_provider = [&] {
    auto list = client_->list(kLibvirtMachine, ns_.name());
    if (!list.ok()) return;
    for (const auto& item : (*list)["items"].GetArray()) {
      std::string name = json::stringOr(&item, "metadata.name");
      if (!json::stringOr(&item, "metadata.deletionTimestamp").empty()) {
        releaseProviderFinalizer(kLibvirtMachine, name);
      } else if (provide_new && json::find(&item, "status.conditions") == nullptr) {
        provide(kLibvirtMachine, name);
      }
    }
  };
  auto pool_status = [&](const char* field) {
    auto pool = client_->get(resources::kVirtualMachinePool, ns_.name(), "web");
    return pool.ok() ? json::integer(&*pool, std::string("status.") + field).value_or(0) : -1;
  };
  auto claim_field = [&](const std::string& claim, const std::string& path) {
    auto object = get(resources::kVirtualMachineClaim, claim);
    return object ? json::stringOr(object.get(), path) : std::string("<absent>");
  };
  auto claim_condition = [&](const std::string& claim, const std::string& type,
                             const char* field = "status") {
    auto object = get(resources::kVirtualMachineClaim, claim);
    const auto* list = object ? json::find(object.get(), "status.conditions") : nullptr;
    if (list == nullptr || !list->IsArray()) return std::string("<none>");
    for (const auto& c : list->GetArray())
      if (json::stringOr(&c, "type") == type) return json::stringOr(&c, field);
    return std::string("<none>");
  };
  auto bound = [&](const std::string& claim) {
    play_provider();
    return claim_condition(claim, "Bound") == "True";
  };
  auto claim_yaml = [&](const std::string& name, const std::string& pool) {
    return "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachineClaim\nmetadata:\n  name: " +
           name + "\nspec:\n  poolRef: {name: " + pool + "}\n  subject: {id: " + name +
           ", issuer: 'https://sso.example.com'}\n";
  };
  // What a member says about itself: its claim label, and its controller owner's kind/name/uid.
  auto member_binding = [&](const std::string& member) {
    auto vm = get(resources::kVirtualMachine, member);
    if (!vm) return std::string("<absent>");
    std::string out;
    const auto* labels = json::find(vm.get(), "metadata.labels");
    if (labels != nullptr && labels->HasMember(kClaimLabel))
      out = (*labels)[kClaimLabel].GetString();
    if (const auto* owner = runtime::controllerReference(*vm)) {
      out += " " + json::stringOr(owner, "kind") + "/" + json::stringOr(owner, "name") + "/" +
             json::stringOr(owner, "uid");
    }
    return out;
  };
  auto uid_of = [&](const std::string& claim) { return claim_field(claim, "metadata.uid"); };

  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        play_provider();
        return pool_status("available") == 2;
      },
      90s))
      << "available: " << pool_status("available");

  // A binds one member: labelled, re-parented, mirrored.
  apply(claim_yaml("a", "web"));
  ASSERT_TRUE(LocalCluster::eventually([&] { return bound("a"); }, 60s))
      << "a: " << claim_condition("a", "Bound", "reason");
  const std::string member_a = claim_field("a", "status.memberRef.name");
  EXPECT_EQ(member_binding(member_a), "a VirtualMachineClaim/a/" + uid_of("a"));
  auto vm_a = get(resources::kVirtualMachine, member_a);
  ASSERT_TRUE(vm_a);
  EXPECT_TRUE(json::boolean(runtime::controllerReference(*vm_a), "blockOwnerDeletion"));
  const auto* labels_a = json::find(vm_a.get(), "metadata.labels");
  ASSERT_TRUE(labels_a != nullptr && labels_a->HasMember(kPoolLabel));
  EXPECT_STREQ((*labels_a)[kPoolLabel].GetString(), "web")
      << "still the pool's member, counted as claimed";
  EXPECT_EQ(claim_condition("a", "Bound", "reason"), "Bound");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    play_provider();
    return claim_condition("a", "Ready") == "True";
  }));
  auto claim_a = get(resources::kVirtualMachineClaim, "a");
  const auto* addresses = json::find(claim_a.get(), "status.addresses");
  ASSERT_TRUE(addresses != nullptr && addresses->IsArray() && addresses->Size() == 1u);
  EXPECT_EQ(json::stringOr(&(*addresses)[0], "address"), "192.0.2.10");
  EXPECT_EQ(json::stringOr(claim_a.get(), "status.observedPowerState"), "PoweredOn");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto events = cluster_.kubectl(
        "get events.events.k8s.io -n " + ns_.name() +
        " -o jsonpath='{range .items[?(@.regarding.kind==\"VirtualMachineClaim\")]}{.reason}:{"
        ".note};{end}'");
    return events.output.find("Bound:bound to member " + member_a) != std::string::npos;
  })) << "the Bound event";

  // The pool refills: two unclaimed members again, a's counted as claimed.
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        play_provider();
        return pool_status("available") == 2 && pool_status("claimed") == 1;
      },
      90s))
      << "available: " << pool_status("available") << ", claimed: " << pool_status("claimed");

  // At rest a bound claim is not written again.
  const int claim_writes = counting_->objectWrites(ns_.name(), "a");
  manager_->claimController().enqueue(ns_.name() + "/a");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    auto queue = manager_->claimController().queue().stats();
    return queue.depth == 0 && queue.processing == 0;
  }));
  EXPECT_EQ(counting_->objectWrites(ns_.name(), "a"), claim_writes) << counting_->describe();

  // B and C at once, with the provider held back: they take the two available members, one each,
  // and E finds none left.
  provide_new = false;
  apply(claim_yaml("b", "web") + "---\n" + claim_yaml("c", "web"));
  ASSERT_TRUE(LocalCluster::eventually([&] { return bound("b") && bound("c"); }, 60s))
      << "b: " << claim_condition("b", "Bound", "reason")
      << ", c: " << claim_condition("c", "Bound", "reason");
  const std::string member_b = claim_field("b", "status.memberRef.name");
  const std::string member_c = claim_field("c", "status.memberRef.name");
  EXPECT_NE(member_b, member_c);
  EXPECT_NE(member_b, member_a);
  EXPECT_NE(member_c, member_a);
  EXPECT_EQ(member_binding(member_b), "b VirtualMachineClaim/b/" + uid_of("b"));
  EXPECT_EQ(member_binding(member_c), "c VirtualMachineClaim/c/" + uid_of("c"));

  apply(claim_yaml("e", "web"));
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return claim_condition("e", "Bound", "reason") == "NoMemberAvailable";
  })) << "e: "
      << claim_condition("e", "Bound", "reason");
  EXPECT_EQ(claim_field("e", "status.memberRef.name"), "");

  // A claim on a pool that does not exist.
  apply(claim_yaml("d", "nowhere"));
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return claim_condition("d", "Bound", "reason") == "PoolNotFound";
  })) << "d: "
      << claim_condition("d", "Bound", "reason");
  EXPECT_EQ(claim_condition("d", "Ready"), "False");

  // Members becoming available wake E: their watch, well before the 30 s safety requeue.
  provide_new = true;
  ASSERT_TRUE(LocalCluster::eventually([&] { return bound("e"); }, 20s))
      << "e: " << claim_condition("e", "Bound", "reason");
  const std::string member_e = claim_field("e", "status.memberRef.name");
  for (const auto& other : {member_a, member_b, member_c}) EXPECT_NE(member_e, other);

  // Deleting A releases its member: the garbage collector deletes it.
  ASSERT_EQ(cluster_.kubectl("delete bvmclaim a --wait=false -n " + ns_.name()).exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        play_provider();
        return get(resources::kVirtualMachine, member_a) == nullptr;
      },
      90s))
      << member_a << " is still there: " << member_binding(member_a);

  // B's member deleted behind its back: B is MemberLost for good.
  ASSERT_EQ(cluster_.kubectl("delete bvm " + member_b + " --wait=false -n " + ns_.name()).exit_code,
            0);
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        play_provider();
        return claim_condition("b", "Bound", "reason") == "MemberLost" &&
               get(resources::kVirtualMachine, member_b) == nullptr;
      },
      90s))
      << "b: " << claim_condition("b", "Bound", "reason");
  manager_->claimController().enqueue(ns_.name() + "/b");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] {
        play_provider();
        auto queue = manager_->claimController().queue().stats();
        return pool_status("available") == 2 && queue.depth == 0 && queue.processing == 0;
      },
      90s))
      << "the pool did not refill";
  EXPECT_EQ(claim_condition("b", "Bound"), "False");
  EXPECT_EQ(claim_condition("b", "Ready", "reason"), "MemberLost");
  EXPECT_EQ(claim_field("b", "status.memberRef.name"), member_b);
  auto still_b =
      client_->list(resources::kVirtualMachine, ns_.name(),
                    kube::ListOptions{.label_selector = std::string(kClaimLabel) + "=b"});
  ASSERT_TRUE(still_b.ok());
  EXPECT_EQ((*still_b)["items"].Size(), 0u) << "b was bound again";
}

TEST_F(ControllerVmTest, VSphereClusterAggregatesTheSelectedProvidersFailureDomains) {
  providerClass(prefix_ + "-vs", "VSphereMachine");
  provider("vc1", prefix_ + "-vs", "{env: prod}", R"({"datacenter":"dc1","cluster":"c1"})");
  provider("vc2", prefix_ + "-vs", "{env: prod}", R"({"datacenter":"dc1","cluster":"c2"})");
  provider("lab", prefix_ + "-vs", "{env: dev}");
  apply(
      "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: VSphereCluster\nmetadata:\n  name: "
      "prod\nspec:\n  providerSelector: {matchLabels: {env: prod}}\n  controlPlaneEndpoint: "
      "{host: 10.0.0.1, port: 6443}\n");
  const kube::ResourceType vsphere_cluster{"infrastructure.banlieue.io", "v1beta2",
                                           "vsphereclusters", true};
  runtime::Object cluster;
  ASSERT_TRUE(LocalCluster::eventually([&] {
    cluster = get(vsphere_cluster, "prod");
    const auto* fds = cluster ? json::find(cluster.get(), "status.failureDomains") : nullptr;
    return fds != nullptr && fds->IsArray() && fds->Size() == 2;
  }));
  const auto& fds = *json::find(cluster.get(), "status.failureDomains");
  EXPECT_STREQ(fds[0]["name"].GetString(), "fd-vc1");
  EXPECT_STREQ(fds[1]["name"].GetString(), "fd-vc2");
  EXPECT_STREQ(fds[1]["attributes"]["cluster"].GetString(), "c2");
  EXPECT_TRUE(json::boolean(cluster.get(), "status.initialization.provisioned"));
  EXPECT_EQ(json::integer(cluster.get(), "status.controlPlaneEndpoint.port"), 6443);

  // A Provider leaving the selection takes its failure domain with it.
  ASSERT_EQ(cluster_.kubectl("label provider vc2 env=dev --overwrite -n " + ns_.name()).exit_code,
            0);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    auto c = get(vsphere_cluster, "prod");
    const auto* list = c ? json::find(c.get(), "status.failureDomains") : nullptr;
    return list != nullptr && list->Size() == 1;
  }));
}

// LibvirtCluster and ProxmoxCluster (issue #24, docs/adr/0046): the same InfraCluster as
// VSphereCluster, each aggregated by a controller of its own: a libvirt cluster over two hosts
// by reference, a Proxmox cluster over its nodes by selector with the control-plane failure
// domains marked, and a paused one left alone.
TEST_F(ControllerVmTest, LibvirtAndProxmoxClustersAdvertiseTheirProvidersFailureDomains) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  providerClass(prefix_ + "-px", "ProxmoxMachine");
  provider("kvm1", prefix_ + "-lv", "{site: lab}");
  provider("kvm2", prefix_ + "-lv", "{site: lab}");
  provider("pve", prefix_ + "-px", "{site: dc}", R"({"node":"pve1"})");
  apply(
      "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: LibvirtCluster\nmetadata:\n  name: "
      "lab\nspec:\n  providerRefs: [{name: kvm2}, {name: kvm1}, {name: gone}]\n"
      "---\n"
      "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: ProxmoxCluster\nmetadata:\n  name: "
      "dc\nspec:\n  providerSelector: {matchLabels: {site: dc}}\n"
      "  controlPlaneFailureDomainSelector: {matchLabels: {zone: z2}}\n"
      "---\n"
      "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: ProxmoxCluster\nmetadata:\n  name: "
      "frozen\nspec:\n  paused: true\n  providerSelector: {matchLabels: {site: dc}}\n");
  const kube::ResourceType libvirt_cluster{"infrastructure.banlieue.io", "v1beta2",
                                           "libvirtclusters", true};
  const kube::ResourceType proxmox_cluster{"infrastructure.banlieue.io", "v1beta2",
                                           "proxmoxclusters", true};
  auto names = [](const runtime::Object& cluster) {
    std::vector<std::string> out;
    const auto* fds = cluster ? json::find(cluster.get(), "status.failureDomains") : nullptr;
    if (fds != nullptr && fds->IsArray()) {
      for (const auto& fd : fds->GetArray()) out.push_back(json::stringOr(&fd, "name"));
    }
    return out;
  };
  runtime::Object lab, dc, frozen;
  ASSERT_TRUE(LocalCluster::eventually([&] {
    lab = get(libvirt_cluster, "lab");
    dc = get(proxmox_cluster, "dc");
    frozen = get(proxmox_cluster, "frozen");
    return names(lab).size() == 2 && names(dc).size() == 1 && frozen &&
           json::find(frozen.get(), "status.conditions") != nullptr;
  })) << (lab ? json::serialize(*lab) : "no lab")
      << (dc ? json::serialize(*dc) : "no dc");
  // providerRefs order, a missing reference said in the Ready message.
  EXPECT_EQ(names(lab), (std::vector<std::string>{"fd-kvm2", "fd-kvm1"}));
  EXPECT_TRUE(json::boolean(lab.get(), "status.initialization.provisioned"));
  EXPECT_THAT(json::serialize(*json::find(lab.get(), "status.conditions")),
              ::testing::HasSubstr("providerRefs not found: gone"));
  // The node is an attribute CAPI passes on; zone z1 is not a control-plane domain here.
  const auto& pve = (*json::find(dc.get(), "status.failureDomains"))[0];
  EXPECT_EQ(json::stringOr(&pve, "name"), "fd-pve");
  EXPECT_EQ(json::stringOr(&pve, "attributes.node"), "pve1");
  EXPECT_FALSE(json::boolean(&pve, "controlPlane", true));
  EXPECT_TRUE(names(frozen).empty());
  EXPECT_THAT(json::serialize(*json::find(frozen.get(), "status.conditions")),
              ::testing::HasSubstr("Paused"));
  // What a user sees: the printer columns of an InfraCluster.
  auto table = cluster_.kubectl("get libvirtclusters,proxmoxclusters -n " + ns_.name());
  EXPECT_THAT(table.output, ::testing::ContainsRegex("libvirtcluster[^ ]*/lab +true"))
      << table.output;
}

}  // namespace
}  // namespace banlieue::controller
