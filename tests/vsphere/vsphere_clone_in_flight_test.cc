// A clone the plugin started and then lost track of (issue #26, item 4): the operation token
// that named the CloneVM_Task never reached the object (the provider killed after the call, a
// status write that failed). vcsim runs with -clone-seconds, so a clone stays queued for a few
// seconds as on a real vCenter and the VM is not in the inventory meanwhile. A create retried
// without the token must adopt the clone in flight instead of starting a second one; a
// deletion without the token must wait for it and delete what it made instead of reporting the
// VM gone and leaving the clone to complete as an orphan.
#include "tests/vsphere/plugin_driver.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace banlieue::vsphere::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace json = sdk::json;

constexpr int kCloneSeconds = 3;
// drive() polls every 20 ms: enough polls to outlast the clone, its power-on and a deletion.
constexpr int kPolls = 1500;

std::string machineSpec() {
  return R"({"template":"DC0_C0_RP0_VM0","datacenter":"DC0","cluster":"DC0_C0",)"
         R"("datastore":"LocalDS_0","numCpus":1,"memoryMiB":512,)"
         R"("network":[{"portGroup":"VM Network"}]})";
}

std::string tokenOf(const sdk::abi::CallOutcome& outcome) {
  auto reply = json::parse(outcome.body, "reply");
  return json::stringOr(&reply, "operation.token");
}

class VsphereCloneInFlightTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    vcsim_ = new Vcsim({"-clone-seconds", std::to_string(kCloneSeconds)});
  }
  static void TearDownTestSuite() {
    delete vcsim_;
    vcsim_ = nullptr;
  }

  void SetUp() override {
    backend_ = std::make_unique<Backend>(*vcsim_);
    vms_before_ = vmCount();
    ASSERT_TRUE(driver_.create(vcsim_->instanceConfig()).ok());
  }

  void TearDown() override {
    driver_.destroy();
    if (::testing::Test::HasFatalFailure()) return;
    // Whatever the test did, every clone it started has completed by now: what is left is
    // what the plugin left.
    std::this_thread::sleep_for(std::chrono::seconds(kCloneSeconds + 1));
    EXPECT_EQ(vmCount(), vms_before_) << "a VM leaked";
  }

  // VMs in vcsim's inventory, counted (not a set of names: two clones may share a name).
  size_t vmCount(const std::string& name = "") {
    auto r = backend_->vim().retrieveFromContainer(
        backend_->vim().client().content(backend_->deadline()).root_folder,
        {{"VirtualMachine", {"name"}}}, backend_->deadline());
    size_t n = 0;
    for (const auto& o : r.objects) n += name.empty() || o.text("name") == name ? 1 : 0;
    return n;
  }

  static Vcsim* vcsim_;
  PluginDriver driver_;
  std::unique_ptr<Backend> backend_;
  size_t vms_before_ = 0;
};

Vcsim* VsphereCloneInFlightTest::vcsim_ = nullptr;

TEST_F(VsphereCloneInFlightTest, ACreateWhoseTokenWasLostAdoptsTheCloneInFlight) {
  const std::string uid = "c10e0000-0000-4000-8000-000000000001";
  const std::string name = "vm-c10e0000";
  auto first = driver_.once("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec()));
  ASSERT_EQ(first.code, BANLIEUE_IN_PROGRESS) << first.reason << ": " << first.message;
  const std::string token = tokenOf(first);
  ASSERT_THAT(token, StartsWith("clone:"));
  EXPECT_EQ(vmCount(name), 0u) << "the clone is still queued";

  // The same call again, as after a provider restart that lost the token.
  auto retried = driver_.once("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec()));
  ASSERT_EQ(retried.code, BANLIEUE_IN_PROGRESS) << retried.reason << ": " << retried.message;
  EXPECT_EQ(tokenOf(retried), token) << "a second clone was started";
  EXPECT_THAT(retried.message, HasSubstr("in flight"));

  auto done =
      driver_.drive("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec()), kPolls);
  ASSERT_TRUE(done.ok()) << done.reason << ": " << done.message;
  std::this_thread::sleep_for(std::chrono::seconds(kCloneSeconds + 1));
  EXPECT_EQ(vmCount(name), 1u) << "one VSphereMachine, one VM";

  auto deleted =
      driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec()), kPolls);
  ASSERT_TRUE(deleted.ok()) << deleted.reason << ": " << deleted.message;
}

TEST_F(VsphereCloneInFlightTest, ADeletionWhoseTokenWasLostWaitsForTheCloneAndDeletesIt) {
  const std::string uid = "c10e0000-0000-4000-8000-000000000002";
  const std::string name = "vm-c10e0000";
  auto first = driver_.once("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec()));
  ASSERT_EQ(first.code, BANLIEUE_IN_PROGRESS) << first.reason << ": " << first.message;
  ASSERT_THAT(tokenOf(first), StartsWith("clone:"));

  // Deleted before the token was saved: the first finalize call carries no token.
  auto waiting = driver_.once("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec()));
  ASSERT_EQ(waiting.code, BANLIEUE_IN_PROGRESS)
      << "the deletion was reported done while the clone was in flight: " << waiting.reason;
  EXPECT_EQ(tokenOf(waiting), tokenOf(first));

  auto deleted =
      driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec()), kPolls);
  ASSERT_TRUE(deleted.ok()) << deleted.reason << ": " << deleted.message;
  std::this_thread::sleep_for(std::chrono::seconds(kCloneSeconds + 1));
  EXPECT_EQ(vmCount(name), 0u) << "the clone completed after the deletion: an orphan";
}

TEST_F(VsphereCloneInFlightTest, AnotherMachinesCloneIsNotMistakenForThisOnesVm) {
  // Two machines, two clones in flight at once: each create adopts nothing of the other's.
  const std::string a = "c10e0000-0000-4000-8000-00000000000a";
  const std::string b = "c10e0001-0000-4000-8000-00000000000b";
  auto first_a = driver_.once("reconcile", "VSphereMachine", a, objectJson(a, machineSpec()));
  auto first_b = driver_.once("reconcile", "VSphereMachine", b, objectJson(b, machineSpec()));
  ASSERT_EQ(first_a.code, BANLIEUE_IN_PROGRESS) << first_a.message;
  ASSERT_EQ(first_b.code, BANLIEUE_IN_PROGRESS) << first_b.message;
  EXPECT_NE(tokenOf(first_a), tokenOf(first_b));
  auto again_b = driver_.once("reconcile", "VSphereMachine", b, objectJson(b, machineSpec()));
  EXPECT_EQ(tokenOf(again_b), tokenOf(first_b));
  for (const auto& uid : {a, b}) {
    ASSERT_TRUE(
        driver_.drive("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec()), kPolls)
            .ok());
    ASSERT_TRUE(
        driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec()), kPolls)
            .ok());
  }
}

}  // namespace
}  // namespace banlieue::vsphere::testing
