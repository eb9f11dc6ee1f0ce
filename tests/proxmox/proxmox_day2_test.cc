// Day-2 operations on a Proxmox guest (issue #20), against the fake PVE API: what a running
// guest cannot take live waits in PVE's pending section, and the plugin brings it in.
#include "tests/proxmox/proxmox_fixture.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace banlieue::proxmox::testing {
namespace {

// The plugin's HardwareApplied condition in a reply, or null.
const rapidjson::Value* hardwareApplied(const rapidjson::Document& reply) {
  const auto* conditions = json::find(&reply, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return nullptr;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == "HardwareApplied") return &c;
  }
  return nullptr;
}

std::string resized(std::string object, const std::string& cores_and_memory) {
  const std::string from = R"("cores":2,"memoryMiB":2048)";
  return object.replace(object.find(from), from.size(), cores_and_memory);
}

int configInt(const rapidjson::Value& vm, const char* key) {
  return std::stoi(json::serialize(vm["config"][key]));
}

// Polls an operation `started` began, as the host does: `object` (the copy the host stored
// with the reply's status) and the latest token, until it is no longer IN_PROGRESS.
CallOutcome pollUntilDone(Driver& driver, const std::string& object, CallOutcome out) {
  for (int i = 0; i < 300 && out.code == BANLIEUE_IN_PROGRESS; ++i) {
    auto reply = json::parse(out.body, "reply");
    const std::string token = json::stringOr(&reply, "operation.token");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    out = driver.once("reconcile", object, token);
  }
  return out;
}

// A data disk added to a running guest is hot-plugged (PVE's default hotplug includes disks):
// no reboot. CPUs and memory wait in PVE's pending section until the next boot, so the plugin
// reboots the guest to apply them, says so meanwhile (HardwareApplied=False,
// RestartingToApply), and never claims the new shape before the guest runs it.
TEST_F(ProxmoxTest, AResizeOfARunningGuestReachesItThroughAReboot) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f1";
  CallOutcome out = driver_->drive("reconcile", machine("grow", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();

  const std::string with_disk =
      provisioned(machine("grow", uid, R"(,"dataDisks":[{"name":"data","sizeGiB":5}])"), vmid);
  out = driver_->drive("reconcile", with_disk);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto state = fake_->state();
  const auto* vm = guest(state, "grow");
  ASSERT_NE(vm, nullptr);
  EXPECT_STREQ((*vm)["config"]["scsi1"].GetString(), "local-lvm:5")
      << "the disk was not hot-plugged";
  EXPECT_FALSE(vm->HasMember("reboots")) << "a disk needs no reboot";

  const std::string bigger = resized(with_disk, R"("cores":4,"memoryMiB":4096)");
  out = driver_->once("reconcile", bigger);
  ASSERT_EQ(out.code, BANLIEUE_IN_PROGRESS) << out.reason << ": " << out.message << " " << out.body;
  auto reply = json::parse(out.body, "reply");
  const auto* pending = hardwareApplied(reply);
  ASSERT_NE(pending, nullptr) << out.body;
  EXPECT_EQ(json::stringOr(pending, "status"), "False");
  EXPECT_EQ(json::stringOr(pending, "reason"), "RestartingToApply");
  const std::string message = json::stringOr(pending, "message");
  EXPECT_NE(message.find("cores"), std::string::npos) << message;
  EXPECT_NE(message.find("memory"), std::string::npos) << message;

  // The host polls the reboot with its token until the guest runs the new shape.
  std::string token = json::stringOr(&reply, "operation.token");
  for (int i = 0; i < 300 && out.code == BANLIEUE_IN_PROGRESS; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    out = driver_->once("reconcile", bigger, token);
    if (out.code == BANLIEUE_IN_PROGRESS) {
      auto polled = json::parse(out.body, "reply");
      token = json::stringOr(&polled, "operation.token");
    }
  }
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  const auto* applied = hardwareApplied(reply);
  ASSERT_NE(applied, nullptr) << out.body;
  EXPECT_EQ(json::stringOr(applied, "status"), "True");
  state = fake_->state();
  vm = guest(state, "grow");
  ASSERT_NE(vm, nullptr);
  EXPECT_EQ(configInt(*vm, "cores"), 4) << "the running configuration kept the old CPUs";
  EXPECT_EQ(configInt(*vm, "memory"), 4096);
  EXPECT_EQ((*vm)["reboots"].GetInt(), 1);
  EXPECT_STREQ((*vm)["status"].GetString(), "running");

  // Converged: another pass reboots nothing.
  out = driver_->drive("reconcile", bigger);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  state = fake_->state();
  EXPECT_EQ((*guest(state, "grow"))["reboots"].GetInt(), 1);
  remove(bigger);
}

// The host's copy of a provisioned machine whose status answered the restart `answered`.
std::string answeredObject(const std::string& object, int vmid, const std::string& answered) {
  std::string out = provisioned(object, vmid);
  out.insert(out.size() - 2, R"(,"lastRestart":{"requestedAt":")" + answered + R"("})");
  return out;
}

// spec.resizePolicy WaitForRestart: PVE keeps the change pending, no reboot, and the reply
// says a restart is required; the user's restart request reboots the guest and applies it.
TEST_F(ProxmoxTest, AResizeThatWaitsForRestartIsAppliedByTheUsersRestart) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f3";
  const std::string policy = R"(,"resizePolicy":"WaitForRestart")";
  CallOutcome out = driver_->drive("reconcile", machine("held", uid, policy));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();

  const std::string bigger =
      provisioned(resized(machine("held", uid, policy), R"("cores":4,"memoryMiB":2048)"), vmid);
  out = driver_->drive("reconcile", bigger);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  const auto* held = hardwareApplied(reply);
  ASSERT_NE(held, nullptr) << out.body;
  EXPECT_EQ(json::stringOr(held, "status"), "False");
  EXPECT_EQ(json::stringOr(held, "reason"), "RestartRequired");
  auto state = fake_->state();
  EXPECT_EQ(configInt(*guest(state, "held"), "cores"), 2) << "the running configuration changed";
  EXPECT_FALSE(guest(state, "held")->HasMember("reboots"));

  const std::string asked_spec =
      resized(machine("held", uid, policy + R"(,"restartRequestedAt":"r1")"),
              R"("cores":4,"memoryMiB":2048)");
  out = driver_->once("reconcile", provisioned(asked_spec, vmid));
  ASSERT_EQ(out.code, BANLIEUE_IN_PROGRESS) << out.reason << ": " << out.message;
  const std::string asked = answeredObject(asked_spec, vmid, "r1");
  out = pollUntilDone(*driver_, asked, out);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  state = fake_->state();
  EXPECT_EQ(configInt(*guest(state, "held"), "cores"), 4);
  EXPECT_EQ((*guest(state, "held"))["reboots"].GetInt(), 1);
  remove(asked);
}

// A restart request on a running guest is one PVE reboot, answered in the reply that starts it
// (status.lastRestart, with the token); once the host stored that answer the same request does
// nothing more. A request on a stopped guest is answered NotRunning and starts nothing.
TEST_F(ProxmoxTest, ARestartRequestRebootsTheRunningGuestOnce) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f2";
  const std::string request = "2026-12-03T08:00:00Z";
  CallOutcome out = driver_->drive("reconcile", machine("again", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();

  const std::string asked = machine("again", uid, R"(,"restartRequestedAt":")" + request + R"(")");
  out = driver_->once("reconcile", provisioned(asked, vmid));
  ASSERT_EQ(out.code, BANLIEUE_IN_PROGRESS) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.requestedAt"), request) << out.body;
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.outcome"), "Restarted") << out.body;
  EXPECT_FALSE(json::stringOr(&reply, "status.lastRestart.performedAt").empty()) << out.body;
  EXPECT_NE(json::stringOr(&reply, "operation.description").find(request), std::string::npos)
      << out.body;

  // The host stored the answer with the token; polling finishes the reboot and starts no other.
  const std::string answered = answeredObject(asked, vmid, request);
  std::string token = json::stringOr(&reply, "operation.token");
  for (int i = 0; i < 300 && out.code == BANLIEUE_IN_PROGRESS; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    out = driver_->once("reconcile", answered, token);
    if (out.code == BANLIEUE_IN_PROGRESS) {
      auto polled = json::parse(out.body, "reply");
      token = json::stringOr(&polled, "operation.token");
    }
  }
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  out = driver_->drive("reconcile", answered);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto state = fake_->state();
  const auto* vm = guest(state, "again");
  ASSERT_NE(vm, nullptr);
  EXPECT_EQ((*vm)["reboots"].GetInt(), 1);
  EXPECT_STREQ((*vm)["status"].GetString(), "running");

  // Powered off, a new request is answered NotRunning and nothing starts.
  out = driver_->drive("reconcile", provisioned(machine("again", uid, "", "PoweredOff"), vmid));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const std::string later = "2026-12-03T09:00:00Z";
  out = driver_->drive(
      "reconcile",
      answeredObject(
          machine("again", uid, R"(,"restartRequestedAt":")" + later + R"(")", "PoweredOff"), vmid,
          request));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.requestedAt"), later) << out.body;
  EXPECT_EQ(json::stringOr(&reply, "status.lastRestart.outcome"), "NotRunning") << out.body;
  state = fake_->state();
  EXPECT_STREQ((*guest(state, "again"))["status"].GetString(), "stopped");
  EXPECT_EQ((*guest(state, "again"))["reboots"].GetInt(), 1);
  remove(answered);
}

}  // namespace
}  // namespace banlieue::proxmox::testing
