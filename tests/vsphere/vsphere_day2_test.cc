// Day-2 operations of a VSphereMachine against the project's vcsim (issue #20): a restart
// request powers the running VM off and on again, once.
#include "tests/vsphere/plugin_driver.h"
#include "tests/vsphere/vcsim_suite.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

namespace banlieue::vsphere::testing {
namespace {

namespace json = sdk::json;

std::string machineSpec(const std::string& extra = "") {
  return R"({"template":"DC0_C0_RP0_VM0","datacenter":"DC0","cluster":"DC0_C0",)"
         R"("datastore":"LocalDS_0","numCpus":1,"memoryMiB":512,)"
         R"("network":[{"portGroup":"VM Network"}])" +
         extra + "}";
}

// Polls an operation `out` began, as the host does: `object` (the copy the host stored with the
// reply's status) with the latest token, until it is no longer IN_PROGRESS.
sdk::abi::CallOutcome pollUntilDone(PluginDriver& driver, const std::string& uid,
                                    const std::string& object, sdk::abi::CallOutcome out,
                                    const std::function<void()>& each = {}) {
  for (int i = 0; i < 500 && out.code == BANLIEUE_IN_PROGRESS; ++i) {
    if (each) each();
    auto reply = json::parse(out.body, "reply");
    std::string body = object;
    body.pop_back();
    body += R"(,"operation":{"token":")" + json::stringOr(&reply, "operation.token") + R"("}})";
    out = driver.once("reconcile", "VSphereMachine", uid, body);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return out;
}

class VsphereDay2Test : public VcsimSuite {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(*vcsim_);
    vms_before_ = backend_->vmNames();
    ASSERT_TRUE(driver_.create(vcsim_->instanceConfig()).ok());
  }
  void TearDown() override {
    driver_.destroy();
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(Backend(*vcsim_).vmNames(), vms_before_) << "a VM leaked";
  }
  std::string power(const std::string& name) {
    return backend_->vm(name, {"runtime.powerState"})->text("runtime.powerState");
  }

  PluginDriver driver_;
  std::unique_ptr<Backend> backend_;
  std::set<std::string> vms_before_;
};

// The request is answered (status.lastRestart) in the reply that powers the VM off, with the
// token; polling that token ends with the VM on again. Once answered, the same request does
// nothing; a new one on a powered-off VM is answered NotRunning.
TEST_F(VsphereDay2Test, ARestartRequestPowersTheRunningVmOffAndOnOnce) {
  const std::string uid = "1a2b3c4d-0000-4000-8000-0000000000a1";
  const std::string name = "vm-1a2b3c4d";
  const std::string request = "2026-12-03T08:00:00Z";
  ASSERT_TRUE(
      driver_.drive("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec())).ok());
  ASSERT_EQ(power(name), "poweredOn");

  const std::string asked = machineSpec(R"(,"restartRequestedAt":")" + request + R"(")");
  auto out = driver_.once("reconcile", "VSphereMachine", uid, objectJson(uid, asked));
  ASSERT_EQ(out.code, BANLIEUE_IN_PROGRESS) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.requestedAt"), request) << out.body;
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.outcome"), "Restarted") << out.body;
  const std::string token = json::stringOr(&reply, "operation.token");
  EXPECT_EQ(token.rfind("poweroff:", 0), 0u) << token;

  // The host stored the answer with the token: the restart goes on to power the VM on.
  const std::string answered = objectJson(
      uid, asked, R"({"lastRestart":{"requestedAt":")" + request + R"(","outcome":"Restarted"}})");
  bool seen_off = false;
  out = pollUntilDone(driver_, uid, answered, out,
                      [&] { seen_off = seen_off || power(name) == "poweredOff"; });
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_TRUE(seen_off) << "the VM was never powered off";
  EXPECT_EQ(power(name), "poweredOn");

  // Answered: nothing more happens.
  out = driver_.once("reconcile", "VSphereMachine", uid, answered);
  EXPECT_TRUE(out.ok()) << out.reason << ": " << out.message;

  const std::string later = "2026-12-03T09:00:00Z";
  ASSERT_TRUE(driver_
                  .drive("reconcile", "VSphereMachine", uid,
                         objectJson(uid, machineSpec(R"(,"desiredPowerState":"PoweredOff")")))
                  .ok());
  out = driver_.drive(
      "reconcile", "VSphereMachine", uid,
      objectJson(uid, machineSpec(R"(,"desiredPowerState":"PoweredOff","restartRequestedAt":")" +
                                  later + R"(")")));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.requestedAt"), later) << out.body;
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.outcome"), "NotRunning") << out.body;
  EXPECT_EQ(power(name), "poweredOff");

  ASSERT_TRUE(
      driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec())).ok());
}

// spec.resizePolicy WaitForRestart: a CPU change of a running VM is not applied (no power off)
// and the reply says a restart is required; the user's restart request powers the VM off, the
// reconfiguration happens while it is off, and it comes back with the new shape.
TEST_F(VsphereDay2Test, AResizeThatWaitsForRestartIsAppliedByTheUsersRestart) {
  const std::string uid = "1a2b3c4d-0000-4000-8000-0000000000a2";
  const std::string name = "vm-1a2b3c4d";
  const std::string policy = R"(,"resizePolicy":"WaitForRestart")";
  ASSERT_TRUE(
      driver_.drive("reconcile", "VSphereMachine", uid, objectJson(uid, machineSpec(policy))).ok());
  std::string bigger = machineSpec(policy);
  bigger.replace(bigger.find(R"("numCpus":1)"), 11, R"("numCpus":2)");
  auto out = driver_.drive("reconcile", "VSphereMachine", uid, objectJson(uid, bigger));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  const auto* conditions = json::find(&reply, "status.conditions");
  ASSERT_TRUE(conditions != nullptr && conditions->IsArray() && conditions->Size() == 1)
      << out.body;
  EXPECT_EQ(json::stringOr(&(*conditions)[0], "reason"), "RestartRequired") << out.body;
  auto vm = backend_->vm(name, {"config.hardware.numCPU", "runtime.powerState"});
  EXPECT_EQ(vm->integer("config.hardware.numCPU"), 1);
  EXPECT_EQ(vm->text("runtime.powerState"), "poweredOn");

  std::string asked = bigger;
  asked.insert(asked.size() - 1, R"(,"restartRequestedAt":"r1")");
  out = driver_.once("reconcile", "VSphereMachine", uid, objectJson(uid, asked));
  ASSERT_EQ(out.code, BANLIEUE_IN_PROGRESS) << out.reason << ": " << out.message;
  out = pollUntilDone(driver_, uid,
                      objectJson(uid, asked, R"({"lastRestart":{"requestedAt":"r1"}})"), out);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  vm = backend_->vm(name, {"config.hardware.numCPU", "runtime.powerState"});
  EXPECT_EQ(vm->integer("config.hardware.numCPU"), 2);
  EXPECT_EQ(vm->text("runtime.powerState"), "poweredOn");
  reply = json::parse(out.body, "reply");
  conditions = json::find(&reply, "status.conditions");
  ASSERT_TRUE(conditions != nullptr && conditions->IsArray() && conditions->Size() == 1)
      << out.body;
  EXPECT_EQ(json::stringOr(&(*conditions)[0], "status"), "True") << out.body;

  ASSERT_TRUE(
      driver_.drive("finalize", "VSphereMachine", uid, objectJson(uid, machineSpec())).ok());
}

}  // namespace
}  // namespace banlieue::vsphere::testing
