// A VirtualMachinePool's members have a lifetime (issue #20): one stuck past
// provisioningTimeoutSeconds is replaced, one unclaimed past maxIdleSeconds after it became
// available is recycled (host/roles/controller/pool_expiry.h). Against the real apiserver, with
// the controller's Manager in-process; the test plays the provider (controller_vm_fixture.h).
#include "tests/integration/controller_vm_fixture.h"

#include <set>

namespace banlieue::controller {
namespace {

using namespace std::chrono_literals;

class PoolLifecycleTest : public ControllerVmTest {
 protected:
  void SetUp() override {
    ControllerVmTest::SetUp();
    providerClass(prefix_ + "-lv", "LibvirtMachine");
    provider("p1", prefix_ + "-lv", "{site: one}");
    patchStatus(
        resources::kProvider, ns_.name(), "p1",
        R"({"failureDomains":[{"name":"fd-a","labels":{"zone":"a"},"attributes":{"availableStorageClasses":["fast"],"availableNetworkClasses":["lan"]}}]})");
    vmClass(prefix_ + "-small");
    image(prefix_ + "-img", {{"p1", "/img/a"}});
  }

  void pool(const std::string& extra, int warm_replicas = 1) {
    apply(
        "apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachinePool\nmetadata:\n  name: web\n"
        "spec:\n  warmReplicas: " +
        std::to_string(warm_replicas) + "\n  readiness: InfrastructureReady\n" + extra +
        "  template:\n    spec:\n      classRef: {name: " + prefix_ +
        "-small}\n      imageRef: {name: " + prefix_ + "-img}\n");
  }

  // The pool's members that are not being deleted (releasing the provider's finalizer of those
  // that are, as the provider would once their machine is gone).
  std::set<std::string> liveMembers() {
    std::set<std::string> names;
    auto list = client_->list(kLibvirtMachine, ns_.name());
    if (!list.ok()) return names;
    for (const auto& item : (*list)["items"].GetArray()) {
      std::string name = json::stringOr(&item, "metadata.name");
      if (!json::stringOr(&item, "metadata.deletionTimestamp").empty()) {
        releaseProviderFinalizer(kLibvirtMachine, name);
        continue;
      }
      names.insert(name);
    }
    return names;
  }
};

TEST_F(PoolLifecycleTest, AMemberStuckPastItsProvisioningTimeoutIsReplaced) {
  pool("  provisioningTimeoutSeconds: 5\n");
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return liveMembers() == std::set<std::string>{"web-0"};
  })) << "the first member";
  // Never provided: it stays not available, so after 5 s it goes and another takes its place.
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        auto live = liveMembers();
        return live.size() == 1 && live.count("web-0") == 0;
      },
      60s))
      << "still: " << ::testing::PrintToString(liveMembers());
}

TEST_F(PoolLifecycleTest, AnAvailableMemberUnclaimedPastMaxIdleIsRecycledAndOneWithinItStays) {
  pool("  maxIdleSeconds: 8\n");
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return liveMembers() == std::set<std::string>{"web-0"}; }));
  provide(kLibvirtMachine, "web-0");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return condition("web-0", "InfrastructureReady") == "True"; }));
  // Within its idle time it stays (the pool looks again when the time is up, not before).
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(liveMembers(), std::set<std::string>{"web-0"});
  EXPECT_TRUE(LocalCluster::eventually(
      [&] {
        auto live = liveMembers();
        for (const auto& name : live) {
          if (name != "web-0" && get(kLibvirtMachine, name) != nullptr &&
              json::find(get(kLibvirtMachine, name).get(), "status.conditions") == nullptr)
            provide(kLibvirtMachine, name);
        }
        return live.size() == 1 && live.count("web-0") == 0;
      },
      60s))
      << "still: " << ::testing::PrintToString(liveMembers());
}

// recycleOnImageChange (default true): a new revision of the template's image replaces the
// unclaimed members made from the old one, the fresh member first, so the pool stays warm.
TEST_F(PoolLifecycleTest, ANewImageRevisionRecyclesMembersOnlyOnceAFreshOneIsAvailable) {
  pool("");
  ASSERT_TRUE(
      LocalCluster::eventually([&] { return liveMembers() == std::set<std::string>{"web-0"}; }));
  provide(kLibvirtMachine, "web-0");
  ASSERT_TRUE(LocalCluster::eventually(
      [&] { return condition("web-0", "InfrastructureReady") == "True"; }));
  auto revision = [&](const std::string& vm) {
    return cluster_
        .kubectl("get bvm " + vm + " -n " + ns_.name() +
                 " -o jsonpath='{.metadata.labels.banlieue\\.io/pool-image-revision}'")
        .output;
  };
  const std::string first = revision("web-0");
  ASSERT_FALSE(first.empty()) << "members carry the image revision they were made from";

  // The image's content changes (another source): a fresh member is made, the old one stays
  // until the fresh one is available.
  auto changed = cluster_.kubectl("patch vmimage " + prefix_ +
                                  "-img --type merge -p "
                                  "'{\"spec\":{\"sources\":[{\"providerClass\":\"any\",\"kind\":"
                                  "\"Template\",\"ref\":\"y\"}]}}'");
  ASSERT_EQ(changed.exit_code, 0) << changed.output;
  ASSERT_TRUE(LocalCluster::eventually([&] { return liveMembers().size() == 2; }))
      << ::testing::PrintToString(liveMembers());
  std::string fresh;
  for (const auto& name : liveMembers()) {
    if (name != "web-0") fresh = name;
  }
  EXPECT_NE(revision(fresh), first);
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(liveMembers().count("web-0"), 1u) << "the old member went before a fresh one was ready";
  provide(kLibvirtMachine, fresh);
  EXPECT_TRUE(LocalCluster::eventually([&] {
    return liveMembers() == std::set<std::string>{fresh};
  })) << ::testing::PrintToString(liveMembers());
  // A label-only edit of the image is no new revision: nothing is recycled.
  cluster_.kubectl("label vmimage " + prefix_ + "-img touched=yes");
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(liveMembers(), std::set<std::string>{fresh});
}

TEST_F(PoolLifecycleTest, MembersGetStaticAddressesInOrderUntilThePoolRunsOut) {
  // Documentation addresses (RFC 5737): nothing is sent to them.
  pool(
      "  warmReplicas: 2\n  addressing:\n    interface: eth0\n    prefix: 24\n"
      "    gateway: 192.0.2.1\n    nameservers: [192.0.2.53]\n"
      "    pool: [192.0.2.1-192.0.2.2, not-an-address, 192.0.2.9-192.0.2.5]\n",
      2);
  auto jsonpath = [&](const std::string& what, const std::string& path) {
    return cluster_.kubectl("get " + what + " -n " + ns_.name() + " -o jsonpath='" + path + "'")
        .output;
  };
  auto capacity = [&](const std::string& field) {
    return jsonpath("bvmpool web", "{.status.conditions[?(@.type==\"Capacity\")]." + field + "}");
  };
  // The gateway is never handed out: one address for two members.
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return capacity("reason") == "AddressRangeExhausted";
  })) << capacity("reason")
      << ": " << capacity("message");
  EXPECT_EQ(capacity("message"),
            "every address of spec.addressing.pool is held by a member or is the gateway (2 "
            "usable); spec.addressing.pool entries skipped as not an IPv4 address, range or "
            "CIDR: 'not-an-address'");
  EXPECT_EQ(jsonpath("bvmpool web", "{.status.replicas}"), "1");
  EXPECT_EQ(jsonpath("bvm web-0", "{.spec.networkOverrides[0].static.address}"), "192.0.2.2");
  // The address reaches the machine the provider makes, with the pool's settings.
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return jsonpath("libvirtmachine web-0", "{.spec.network[0].ipam.static.address}") ==
           "192.0.2.2";
  }));
  EXPECT_EQ(jsonpath("libvirtmachine web-0", "{.spec.network[0].ipam.static.gateway}"),
            "192.0.2.1");
  EXPECT_EQ(jsonpath("libvirtmachine web-0", "{.spec.network[0].ipam.static.prefix}"), "24");

  // More addresses: the second member takes the next one and the pool has capacity again.
  auto widened = cluster_.kubectl(
      "patch bvmpool web -n " + ns_.name() +
      " --type merge -p '{\"spec\":{\"addressing\":{\"pool\":[\"192.0.2.1-192.0.2.2\","
      "\"192.0.2.16/30\"]}}}'");
  ASSERT_EQ(widened.exit_code, 0) << widened.output;
  ASSERT_TRUE(LocalCluster::eventually([&] { return liveMembers().size() == 2; }))
      << capacity("reason") << ": " << capacity("message");
  EXPECT_EQ(jsonpath("bvm web-1", "{.spec.networkOverrides[0].static.address}"), "192.0.2.17");
  EXPECT_TRUE(LocalCluster::eventually([&] { return capacity("reason") == "Available"; }))
      << capacity("reason") << ": " << capacity("message");
}

// Members are made one at a time past the scheduler, and "past" means placed: while the image
// is not ready, the first member waits unplaced and no other is made beside it (they would all
// be placed at once later, each before the cache shows the others' placement).
TEST_F(PoolLifecycleTest, WhileTheImageIsNotReadyOnlyOneMemberWaitsToBePlaced) {
  image(prefix_ + "-img", {});  // no Provider has it yet
  pool("", 3);
  auto members = [&] {
    return cluster_
        .kubectl("get bvm -n " + ns_.name() +
                 " -l banlieue.io/pool=web -o jsonpath='{.items[*].metadata.name}'")
        .output;
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return members() == "web-0"; })) << members();
  ASSERT_TRUE(LocalCluster::eventually([&] {
    return condition("web-0", "Scheduled", "reason") == "ImageNotReady";
  })) << condition("web-0", "Scheduled", "reason");
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(members(), "web-0") << "members were made beside one that is not placed";
  // Once the image is there, web-0 is placed and the next member follows it (up to maxSurge,
  // 2, unprovided members at a time).
  image(prefix_ + "-img", {{"p1", "/img/a"}});
  EXPECT_TRUE(
      LocalCluster::eventually([&] { return condition("web-0", "Scheduled") == "True"; }, 60s))
      << condition("web-0", "Scheduled", "reason");
  EXPECT_TRUE(LocalCluster::eventually([&] { return members() == "web-0 web-1"; }, 60s))
      << members();
}

}  // namespace
}  // namespace banlieue::controller
