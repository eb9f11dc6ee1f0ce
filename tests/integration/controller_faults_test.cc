// The controller under faults (issue #26, item 6), against the real local apiserver
// (controller_vm_fixture.h): a swap after a restart that forgot the old kind, and an object of
// the VM's name that the informers cannot see. Label `chaos`.
#include "tests/integration/controller_vm_fixture.h"

namespace banlieue::controller {
namespace {

using namespace std::chrono_literals;

// The VM's previous kind is no longer published by any ProviderClass (its class was deleted, or
// its plugin no longer declares it) and the controller restarted since: the swap still finds the
// old object through status.infrastructureRef and removes it before creating the new one.
TEST_F(ControllerVmTest, ASwapAfterARestartFindsTheOldObjectThroughItsReference) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  providerClass(prefix_ + "-px", "ProxmoxMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  provider("p3", prefix_ + "-px", "{site: three}", R"({"node":"pve1"})");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}, {"p3", "9000"}});
  virtualMachine("db", "site: one");
  provisionLibvirt("db");

  patchStatus(resources::kProviderClass, "", prefix_ + "-lv", R"({"machineKind":null})");
  restartController();
  ASSERT_EQ(placeOn("db", "three").exit_code, 0);
  ASSERT_TRUE(LocalCluster::eventually([&] { return terminating(kLibvirtMachine, "db"); }))
      << condition("db", "Ready", "message");
  EXPECT_EQ(get(kProxmoxMachine, "db"), nullptr) << "created beside the old one";
  releaseProviderFinalizer(kLibvirtMachine, "db");
  ASSERT_TRUE(LocalCluster::eventually([&] { return get(kProxmoxMachine, "db") != nullptr; }));
  EXPECT_EQ(get(kLibvirtMachine, "db"), nullptr);
}

// An object of the VM's name and kind made by someone else, without the labels the controller's
// informers select on: a conflict the VM reports, never an object force-applied over.
TEST_F(ControllerVmTest, AnUnlabelledObjectOfTheVmsNameIsAConflictAndLeftAlone) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  apply(
      "apiVersion: infrastructure.banlieue.io/v1beta2\nkind: LibvirtMachine\nmetadata:\n"
      "  name: db\nspec:\n  providerRef: {name: elsewhere}\n  domainName: theirs\n  pool: theirs\n"
      "  bootSource: {kind: backingVolume, volume: theirs.qcow2}\n  vcpus: 1\n  memoryMiB: 256\n"
      "  disks: [{name: root, sizeGiB: 1}]\n");
  const std::string before =
      json::stringOr(get(kLibvirtMachine, "db").get(), "metadata.resourceVersion");
  virtualMachine("db");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("db", "Ready", "reason") == "InfraNameConflict";
  })) << condition("db", "Ready", "reason")
      << ": " << condition("db", "Ready", "message");
  EXPECT_EQ(condition("db", "Ready", "message"),
            "LibvirtMachine " + ns_.name() +
                "/db exists but is not owned by this VirtualMachine; rename or delete it");
  auto theirs = get(kLibvirtMachine, "db");
  ASSERT_NE(theirs, nullptr);
  EXPECT_EQ(json::stringOr(theirs.get(), "metadata.resourceVersion"), before);
  EXPECT_EQ(json::stringOr(theirs.get(), "spec.providerRef.name"), "elsewhere");
}

// A VM whose deletion waits says so on Ready, naming the object it waits for and, when its
// Provider cannot remove it, why: it no longer sits Terminating with Ready=True.
TEST_F(ControllerVmTest, ABlockedDeletionSaysWhatItWaitsFor) {
  providerClass(prefix_ + "-lv", "LibvirtMachine");
  provider("p1", prefix_ + "-lv", "{site: one}");
  vmClass(prefix_ + "-small");
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  virtualMachine("db");
  provisionLibvirt("db");

  ASSERT_EQ(cluster_.kubectl("delete bvm db --wait=false -n " + ns_.name()).exit_code, 0);
  const std::string waiting =
      "waiting for LibvirtMachine db (Provider p1) to be deleted, each after its backend machine";
  // The test's Provider never reported Ready: nothing is known to remove the machine.
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return condition("db", "Ready", "reason") == "DeletionBlocked" &&
           condition("db", "Ready", "message") ==
               waiting + "; Provider p1 has not reported Ready (is its workload running?)";
  })) << condition("db", "Ready", "reason")
      << ": " << condition("db", "Ready", "message");
  EXPECT_EQ(condition("db", "Ready"), "False");

  patchStatus(resources::kProvider, ns_.name(), "p1",
              R"({"conditions":[{"type":"Ready","status":"True","reason":"Connected",)"
              R"("message":"connected","lastTransitionTime":"2026-01-01T00:00:00Z"}]})");
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return condition("db", "Ready", "reason") == "Deleting" &&
           condition("db", "Ready", "message") == waiting;
  })) << condition("db", "Ready", "reason")
      << ": " << condition("db", "Ready", "message");

  releaseProviderFinalizer(kLibvirtMachine, "db");
  EXPECT_TRUE(
      LocalCluster::eventually([&] { return get(resources::kVirtualMachine, "db") == nullptr; }));
}

}  // namespace
}  // namespace banlieue::controller
