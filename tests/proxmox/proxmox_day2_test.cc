// Day-2 operations on a Proxmox guest (issue #20), against the fake PVE API: what a running
// guest cannot take live waits in PVE's pending section, and the plugin brings it in; the
// snapshot slot (ABI 1.2) on PVE's /nodes/{node}/qemu/{vmid}/snapshot API; and the change feed
// (ABI 1.4, issue #23) that names a guest changed behind the plugin's back.
#include "plugins/proxmox/src/https.h"
#include "plugins/proxmox/src/pve_client.h"
#include "plugins/proxmox/src/snapshots.h"
#include "tests/proxmox/proxmox_fixture.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace banlieue::proxmox::testing {
namespace {

// The plugin's condition `type` in a reply, or null.
const rapidjson::Value* replyCondition(const rapidjson::Document& reply, const char* type) {
  const auto* conditions = json::find(&reply, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return nullptr;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == type) return &c;
  }
  return nullptr;
}

const rapidjson::Value* hardwareApplied(const rapidjson::Document& reply) {
  return replyCondition(reply, "HardwareApplied");
}

// "status/reason" of the reply's GuestReady condition, or "absent".
std::string guestReady(const CallOutcome& out) {
  auto reply = json::parse(out.body, "reply");
  const auto* c = replyCondition(reply, "GuestReady");
  if (c == nullptr) return "absent";
  return json::stringOr(c, "status") + "/" + json::stringOr(c, "reason");
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
// Guest readiness (a pool with readiness GuestReady waits for it) is the QEMU guest agent
// answering through PVE: the agent call the plugin makes for the addresses anyway, so it costs
// no request more. A guest whose agent stops answering (still booting, or an image without
// qemu-guest-agent) is not ready, and a stopped guest is not running.
TEST_F(ProxmoxTest, GuestReadyIsTheGuestAgentAnswering) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f4";
  CallOutcome out = driver_->drive("reconcile", machine("agent", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_EQ(guestReady(out), "True/GuestAgentResponding") << out.body;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
  const std::string object = provisioned(machine("agent", uid, ""), vmid);

  fake_->fake("agent?vmid=" + std::to_string(vmid) + "&state=down");
  out = driver_->drive("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_EQ(guestReady(out), "False/GuestAgentNotResponding") << out.body;
  EXPECT_EQ(json::parse(out.body, "reply")["status"]["addresses"].Size(), 0u) << out.body;

  fake_->fake("agent?vmid=" + std::to_string(vmid) + "&state=up");
  out = driver_->drive("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_EQ(guestReady(out), "True/GuestAgentResponding") << out.body;

  out = driver_->drive("reconcile", provisioned(machine("agent", uid, "", "PoweredOff"), vmid));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_EQ(guestReady(out), "False/NotRunning") << out.body;
  remove(object);
}

// Whether the reply says "settled" (docs/adr/0054), which lets the host skip the passes that
// change none of the machine's inputs: Proxmox carries every change over several calls in the
// operation token or in PVE's pending config, so never in the pass that saw a task end or
// changed the config, never while changes wait for a boot, never while a running guest's agent
// does not answer; yes once a pass finds the guest as its spec asks.
TEST_F(ProxmoxTest, AReplySaysSettledOnlyWhenTheGuestIsAtRest) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f5";
  auto settled = [](const CallOutcome& out) {
    auto reply = json::parse(out.body, "reply");
    return json::boolean(&reply, "settled");
  };
  CallOutcome out = driver_->drive("reconcile", machine("rest", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_FALSE(settled(out)) << "the pass that saw the start task end: " << out.body;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
  const std::string object = provisioned(machine("rest", uid, ""), vmid);
  out = driver_->once("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_TRUE(settled(out)) << "running as asked, its agent answering: " << out.body;

  fake_->fake("agent?vmid=" + std::to_string(vmid) + "&state=down");
  out = driver_->once("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_FALSE(settled(out)) << "the agent does not answer: " << out.body;
  fake_->fake("agent?vmid=" + std::to_string(vmid) + "&state=up");

  // A resize that waits for the user's restart: the pass that changes the config does not
  // settle, nor the next, while PVE holds the change for the next boot.
  const std::string policy = R"(,"resizePolicy":"WaitForRestart")";
  const std::string bigger =
      provisioned(resized(machine("rest", uid, policy), R"("cores":4,"memoryMiB":2048)"), vmid);
  out = driver_->once("reconcile", bigger);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_FALSE(settled(out)) << "the pass that changed the config: " << out.body;
  out = driver_->once("reconcile", bigger);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_FALSE(settled(out)) << "changes pending for the next boot: " << out.body;

  // Off as asked, its pending changes applied by the stop or waiting for the next start: the
  // pass that saw the shutdown end does not settle; a pass that finds it off settles only when
  // PVE holds nothing for the next boot.
  const std::string off = provisioned(
      resized(machine("rest", uid, policy, "PoweredOff"), R"("cores":4,"memoryMiB":2048)"), vmid);
  out = driver_->drive("reconcile", off);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_FALSE(settled(out)) << "the pass that saw the shutdown end: " << out.body;
  out = driver_->once("reconcile", off);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  const auto* hardware = hardwareApplied(reply);
  ASSERT_NE(hardware, nullptr) << out.body;
  EXPECT_EQ(settled(out), json::stringOr(hardware, "reason") == "Applied") << out.body;
  remove(off);
}

// The change feed's cursor, and what its reply named ("all" as "*").
std::string cursorOf(const CallOutcome& out) {
  auto reply = json::parse(out.body, "watch reply");
  return json::stringOr(&reply, "cursor");
}
std::vector<std::string> namedBy(const CallOutcome& out) {
  auto reply = json::parse(out.body, "watch reply");
  std::vector<std::string> named;
  if (json::boolean(&reply, "all")) named.emplace_back("*");
  for (const auto& id : reply["changed"].GetArray()) named.emplace_back(id.GetString());
  return named;
}

// Another PVE client than the plugin (an admin's): what changes a guest behind its back.
std::unique_ptr<PveClient> adminClient(const FakePve& fake) {
  TlsOptions tls;
  tls.ca_bundle_pem = fake.caPem();
  const Endpoint endpoint = Endpoint::parse(fake.url());
  PveCredentials credentials;
  credentials.token = std::string(FakePve::kUser) + "=" + FakePve::kSecret;
  return std::make_unique<PveClient>(makeHttpsTransport(endpoint, tls), endpoint,
                                     std::move(credentials));
}

// Issue #23, ADR 0057: the change feed names a guest stopped behind the plugin's back, by one
// listing of the cluster's guests every 10 s (the only request it makes, however many machines
// there are). A quiet feed answers by its deadline with nothing changed, though a running
// guest's uptime and usage moved meanwhile; the next reconcile starts the guest again.
TEST_F(ProxmoxTest, TheChangeFeedNamesAGuestStoppedBehindItsBack) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f7";
  CallOutcome out = driver_->drive("reconcile", machine("watched", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  const int vmid = reply["status"]["vmid"].GetInt();
  const std::string provider_id = json::stringOr(&reply, "status.providerID");
  ASSERT_EQ(provider_id, "proxmox://pve1/" + std::to_string(vmid)) << out.body;
  const std::string object = provisioned(machine("watched", uid, ""), vmid);
  const size_t requests_before = fake_->state()["requestLog"].Size();

  CallOutcome first = driver_->watchChanges("", std::chrono::seconds(10));
  ASSERT_TRUE(first.ok()) << first.reason << ": " << first.message;
  EXPECT_TRUE(namedBy(first).empty()) << "the first call only starts following: " << first.body;

  std::this_thread::sleep_for(std::chrono::seconds(1));  // the guest's uptime moves
  auto asked = std::chrono::steady_clock::now();
  CallOutcome quiet = driver_->watchChanges(cursorOf(first), std::chrono::seconds(3));
  ASSERT_TRUE(quiet.ok()) << quiet.reason << ": " << quiet.message;
  EXPECT_NE(quiet.body.find(R"("changed":[])"), std::string::npos) << quiet.body;
  EXPECT_NE(quiet.body.find(R"("all":false)"), std::string::npos) << quiet.body;
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(3))
      << "answered before its deadline";

  const std::string vm = "/nodes/pve1/qemu/" + std::to_string(vmid);
  (void)adminClient(*fake_)->post(vm + "/status/stop", {},
                                  std::chrono::steady_clock::now() + std::chrono::seconds(10));
  asked = std::chrono::steady_clock::now();
  CallOutcome changed = driver_->watchChanges(cursorOf(quiet), std::chrono::seconds(30));
  ASSERT_TRUE(changed.ok()) << changed.reason << ": " << changed.message;
  EXPECT_EQ(namedBy(changed), std::vector<std::string>{provider_id}) << changed.body;
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(12))
      << "named at the next listing, not at the deadline";

  // All the feed asked of PVE: the cluster's guest list, at most once per 10 s.
  auto state = fake_->state();
  const auto& log = state["requestLog"];
  int listings = 0;
  for (size_t i = requests_before; i < log.Size(); ++i) {
    const std::string request = log[static_cast<rapidjson::SizeType>(i)].GetString();
    if (request == "GET /cluster/resources") {
      ++listings;
    } else {
      EXPECT_EQ(request, "POST " + vm + "/status/stop") << "a request per machine";
    }
  }
  EXPECT_GE(listings, 2) << "the baseline and the listing that saw the stop";
  EXPECT_LE(listings, 3);
  EXPECT_STREQ((*guest(state, "watched"))["status"].GetString(), "stopped");

  out = driver_->drive("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_STREQ((*guest(fake_->state(), "watched"))["status"].GetString(), "running");
  remove(object);
}

// Issue #23: a listing that fails (here: not a list) names nothing; the call fails, and the
// host's call again with the same cursor is answered from the last good listing, so the stop
// it missed is not lost.
TEST_F(ProxmoxTest, AFailedListingOfTheChangeFeedLosesNoChange) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f8";
  CallOutcome out = driver_->drive("reconcile", machine("missed", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  const int vmid = reply["status"]["vmid"].GetInt();
  const std::string provider_id = json::stringOr(&reply, "status.providerID");

  CallOutcome first = driver_->watchChanges("", std::chrono::seconds(10));
  ASSERT_TRUE(first.ok()) << first.reason << ": " << first.message;
  (void)adminClient(*fake_)->post("/nodes/pve1/qemu/" + std::to_string(vmid) + "/status/stop", {},
                                  std::chrono::steady_clock::now() + std::chrono::seconds(10));
  fake_->fake("malformed-resources?count=1");
  CallOutcome failed = driver_->watchChanges(cursorOf(first), std::chrono::seconds(30));
  EXPECT_EQ(failed.code, BANLIEUE_UNAVAILABLE) << failed.reason << ": " << failed.body;
  EXPECT_EQ(failed.reason, "MalformedReply") << failed.message;

  CallOutcome again = driver_->watchChanges(cursorOf(first), std::chrono::seconds(30));
  ASSERT_TRUE(again.ok()) << again.reason << ": " << again.message;
  EXPECT_EQ(namedBy(again), std::vector<std::string>{provider_id}) << again.body;
  remove(provisioned(machine("missed", uid, ""), vmid));
}

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

// -- snapshots ----------------------------------------------------------------------------

// PVE's pve-snapshot-name: a pve-configid of at most 40 characters.
bool isPveSnapname(const std::string& name) {
  static const std::regex kConfigId("[A-Za-z][A-Za-z0-9_-]+");
  return name.size() <= 40 && std::regex_match(name, kConfigId) && name != "current";
}

// The host's copy of a provisioned machine with spec.providerID, as the runtime sets it.
std::string withProviderId(const std::string& object, int vmid, const std::string& node = "pve1") {
  std::string out = provisioned(object, vmid);
  const std::string spec = R"("spec":{)";
  return out.insert(out.find(spec) + spec.size(),
                    R"("providerID":"proxmox://)" + node + "/" + std::to_string(vmid) + R"(",)");
}

std::string snapshotRequest(const std::string& action, const std::string& machine_object,
                            const std::string& name, const std::string& ref = {},
                            bool memory = false) {
  std::string body =
      R"({"action":")" + action + R"(","kind":"ProxmoxMachine","machine":)" + machine_object;
  if (action != "list") {
    body += R"(,"snapshot":{"name":")" + jsonEscape(name) + R"(","uid":"snap-uid","memory":)" +
            (memory ? "true" : "false") + "}";
  }
  if (!ref.empty()) body += R"(,"snapshotRef":")" + jsonEscape(ref) + R"(")";
  return body + "}";
}

const rapidjson::Value* vmById(const rapidjson::Document& state, int vmid) {
  for (const auto& vm : state["vms"].GetArray()) {
    if (vm["vmid"].GetInt() == vmid) return &vm;
  }
  return nullptr;
}

// The fake's snapshots of a guest: name -> the snapshot as PVE stores it.
const rapidjson::Value* fakeSnapshots(const rapidjson::Document& state, int vmid) {
  const auto* vm = vmById(state, vmid);
  if (vm == nullptr || !vm->HasMember("snapshots")) return nullptr;
  return &(*vm)["snapshots"];
}

int snapshotCount(const rapidjson::Document& state, int vmid) {
  const auto* snapshots = fakeSnapshots(state, vmid);
  return snapshots == nullptr ? 0 : static_cast<int>(snapshots->MemberCount());
}

// The API requests the fake served from index `from` on.
std::vector<std::string> requestsSince(const rapidjson::Document& state, size_t from) {
  std::vector<std::string> out;
  const auto& log = state["requestLog"];
  for (rapidjson::SizeType i = static_cast<rapidjson::SizeType>(from); i < log.Size(); ++i) {
    out.emplace_back(log[i].GetString());
  }
  return out;
}

size_t countMatching(const std::vector<std::string>& requests, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(std::count_if(
      requests.begin(), requests.end(), [&](const auto& r) { return std::regex_search(r, re); }));
}

// A snapshot name PVE takes as it is stays itself; anything else maps to a valid PVE snapname,
// the same for the same name, different for different names.
TEST(ProxmoxSnapshotName, EveryNameMapsToAStableValidPveSnapname) {
  EXPECT_EQ(pveSnapshotName("before-upgrade"), "before-upgrade");
  EXPECT_EQ(pveSnapshotName("Nightly_2026"), "Nightly_2026");
  const std::string odd = "default/web-0.nightly 2026-12-04 (before upgrade)";
  const std::string mapped = pveSnapshotName(odd);
  EXPECT_TRUE(isPveSnapname(mapped)) << mapped;
  EXPECT_EQ(pveSnapshotName(odd), mapped) << "not deterministic";
  EXPECT_NE(pveSnapshotName(odd + "!"), mapped);
  EXPECT_EQ(mapped.rfind("default-web-0-nightly", 0), 0u) << mapped << " hides the name";
  const std::vector<std::string> names = {"current",
                                          "x",
                                          "1st",
                                          "-",
                                          "_a",
                                          "a.b",
                                          "été",
                                          std::string(40, 'a') + "b",
                                          std::string(80, 'z'),
                                          "snapshot name with spaces"};
  for (const std::string& name : names) {
    const std::string pve = pveSnapshotName(name);
    EXPECT_TRUE(isPveSnapname(pve)) << name << " -> " << pve;
    EXPECT_EQ(pveSnapshotName(name), pve) << name;
  }
  // Long names that differ only at their end stay apart.
  EXPECT_NE(pveSnapshotName(std::string(79, 'a') + "1"),
            pveSnapshotName(std::string(79, 'a') + "2"));
  // A name that is already a valid snapname is never the mapping of another one.
  EXPECT_NE(pveSnapshotName("a.b"), "a-b");
}

// create (a PVE task: IN_PROGRESS with its UPID, then OK with the snapname, snaptime as
// createdAt and vmstate as memory), create again (the same ref, no second snapshot and no
// second POST), list (with current), rollback (the configuration is the snapshot's again),
// delete twice (OK both times, one DELETE), rollback of the deleted one (SnapshotNotFound).
TEST_F(ProxmoxTest, ASnapshotIsTakenOnceListedRevertedToAndDeleted) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f4";
  CallOutcome out = driver_->drive("reconcile", machine("snap", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
  const std::string object = withProviderId(machine("snap", uid, ""), vmid);
  const std::string vm_path = "/nodes/pve1/qemu/" + std::to_string(vmid) + "/snapshot";

  const size_t before = fake_->state()["requests"].GetUint();
  const std::string create = snapshotRequest("create", object, "before-upgrade");
  out = driver_->snapshotOnce(create, uid);
  ASSERT_EQ(out.code, BANLIEUE_IN_PROGRESS) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  EXPECT_EQ(json::stringOr(&reply, "operation.token").rfind("snapshot-create:UPID:pve1:", 0), 0u)
      << out.body;
  out =
      driver_->snapshot(Driver::withToken(create, json::stringOr(&reply, "operation.token")), uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  const std::string ref = json::stringOr(&reply, "status.snapshotRef");
  EXPECT_EQ(ref, "before-upgrade");
  const std::string created_at = json::stringOr(&reply, "status.createdAt");
  EXPECT_TRUE(std::regex_match(created_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << created_at;
  EXPECT_FALSE(json::boolean(&reply, "status.memory", true)) << out.body;
  EXPECT_FALSE(reply.HasMember("operation") && reply["operation"].IsObject()) << out.body;

  auto state = fake_->state();
  const auto requests = requestsSince(state, before);
  const size_t task_polls = countMatching(requests, "^GET /nodes/pve1/tasks/.*/status$");
  std::cout << "PVE API calls for one snapshot create: " << requests.size() << " (" << task_polls
            << " task status polls)\n";
  EXPECT_EQ(countMatching(requests, "^POST " + vm_path + "$"), 1u);
  // resources, list, POST; then, once the task is done: resources, list.
  EXPECT_EQ(requests.size() - task_polls, 5u) << json::serialize(state["requestLog"]);
  ASSERT_EQ(snapshotCount(state, vmid), 1);
  const auto& taken = (*fakeSnapshots(state, vmid))["before-upgrade"];
  EXPECT_FALSE(taken.HasMember("snapstate")) << json::serialize(taken);
  EXPECT_STREQ((*vmById(state, vmid))["config"]["parent"].GetString(), "before-upgrade");

  // Again (a create whose reply was lost): the same ref, found by its name, no second POST.
  const size_t again_from = state["requests"].GetUint();
  out = driver_->snapshotOnce(create, uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  EXPECT_EQ(json::stringOr(&reply, "status.snapshotRef"), ref);
  EXPECT_EQ(json::stringOr(&reply, "status.createdAt"), created_at);
  state = fake_->state();
  EXPECT_EQ(snapshotCount(state, vmid), 1);
  EXPECT_EQ(countMatching(requestsSince(state, again_from), "^POST "), 0u);

  out = driver_->snapshotOnce(snapshotRequest("list", object, ""), uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  const auto* listed = json::find(&reply, "status.snapshots");
  ASSERT_TRUE(listed != nullptr && listed->IsArray()) << out.body;
  ASSERT_EQ(listed->Size(), 1u) << out.body << " (PVE's 'current' is no snapshot)";
  EXPECT_EQ(json::stringOr(&(*listed)[0], "name"), "before-upgrade");
  EXPECT_EQ(json::stringOr(&(*listed)[0], "snapshotRef"), ref);
  EXPECT_EQ(json::stringOr(&(*listed)[0], "createdAt"), created_at);
  EXPECT_TRUE(json::boolean(&(*listed)[0], "current", false)) << out.body;

  // The guest changes; the rollback brings the snapshot's configuration back (and leaves the
  // guest stopped: the snapshot holds no RAM, the next reconcile starts it).
  fake_->fake("config?vmid=" + std::to_string(vmid) + "&key=cores&value=6");
  const std::string revert = snapshotRequest("revert", object, "before-upgrade", ref);
  out = driver_->snapshotOnce(revert, uid);
  ASSERT_EQ(out.code, BANLIEUE_IN_PROGRESS) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  const std::string revert_token = json::stringOr(&reply, "operation.token");
  EXPECT_EQ(revert_token.rfind("snapshot-revert:UPID:pve1:", 0), 0u) << out.body;
  out = driver_->snapshot(Driver::withToken(revert, revert_token), uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  state = fake_->state();
  const auto* vm = vmById(state, vmid);
  ASSERT_NE(vm, nullptr);
  EXPECT_EQ(configInt(*vm, "cores"), 2) << "the rollback did not restore the configuration";
  EXPECT_EQ((*vm)["rollbacks"].GetInt(), 1);
  EXPECT_STREQ((*vm)["status"].GetString(), "stopped");

  const std::string remove_request = snapshotRequest("delete", object, "before-upgrade", ref);
  const size_t delete_from = state["requests"].GetUint();
  out = driver_->snapshot(remove_request, uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_EQ(snapshotCount(fake_->state(), vmid), 0);
  out = driver_->snapshot(remove_request, uid);
  EXPECT_TRUE(out.ok()) << "a deletion of what is gone: " << out.reason << ": " << out.message;
  state = fake_->state();
  EXPECT_EQ(countMatching(requestsSince(state, delete_from), "^DELETE " + vm_path + "/"), 1u);

  out = driver_->snapshot(revert, uid);
  EXPECT_EQ(out.code, BANLIEUE_NOT_FOUND) << out.reason << ": " << out.message;
  EXPECT_EQ(out.reason, "SnapshotNotFound") << out.message;
  out = driver_->snapshotOnce(snapshotRequest("list", object, ""), uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  EXPECT_EQ(json::find(&reply, "status.snapshots")->Size(), 0u) << out.body;
  remove(object);
}

// A machine without a backend VM has nothing to snapshot; a providerID that is not the
// plugin's is refused, not guessed at.
TEST_F(ProxmoxTest, ASnapshotOfAMachineWithoutAVmIsRefused) {
  const std::string bare = machine("nothing", "a1b2c3d4-0000-4000-8000-0000000000f5", "");
  for (const char* action : {"create", "list", "revert", "delete"}) {
    CallOutcome out = driver_->snapshotOnce(snapshotRequest(action, bare, "s1", "s1"));
    EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION) << action << ": " << out.message;
    EXPECT_EQ(out.reason, "MachineNotProvisioned") << action << ": " << out.message;
  }
  std::string foreign = bare;
  foreign.insert(foreign.find(R"("spec":{)") + 8, R"("providerID":"vsphere://4211-ab",)");
  CallOutcome out = driver_->snapshotOnce(snapshotRequest("create", foreign, "s1"));
  EXPECT_EQ(out.code, BANLIEUE_INVALID_ARGUMENT) << out.message;
  EXPECT_EQ(countMatching(requestsSince(fake_->state(), 0), "snapshot"), 0u)
      << "a refused call reached PVE";
}

// A running guest with snapshots (one holding its RAM, under a name PVE would refuse as it is)
// is destroyed by finalize, its snapshots with it; afterwards its snapshots are NOT_FOUND
// (VM gone) for create and list and deleted for delete. A snapshot call never acts on a VM
// that is not the machine's (a VMID PVE handed to another guest).
TEST_F(ProxmoxTest, AGuestWithSnapshotsIsDestroyedWithThem) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-0000000000f6";
  CallOutcome out = driver_->drive("reconcile", machine("snapped", uid, ""));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
  const std::string object = withProviderId(machine("snapped", uid, ""), vmid);

  const std::string live_name = "default/snapped.live (with memory)";
  out = driver_->snapshot(snapshotRequest("create", object, live_name, "", true), uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  const std::string live = json::stringOr(&reply, "status.snapshotRef");
  EXPECT_EQ(live, pveSnapshotName(live_name));
  EXPECT_TRUE(json::boolean(&reply, "status.memory", false)) << out.body;
  out = driver_->snapshot(snapshotRequest("create", object, "disk-only"), uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;

  out = driver_->snapshotOnce(snapshotRequest("list", object, ""), uid);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  reply = json::parse(out.body, "reply");
  const auto* listed = json::find(&reply, "status.snapshots");
  ASSERT_TRUE(listed != nullptr && listed->IsArray() && listed->Size() == 2) << out.body;
  for (const auto& s : listed->GetArray()) {
    const bool is_live = json::stringOr(&s, "snapshotRef") == live;
    EXPECT_EQ(json::boolean(&s, "memory", !is_live), is_live) << out.body;
    EXPECT_EQ(json::boolean(&s, "current", is_live), !is_live) << out.body;
  }
  auto state = fake_->state();
  EXPECT_EQ(snapshotCount(state, vmid), 2);
  EXPECT_TRUE((*fakeSnapshots(state, vmid))[live.c_str()].HasMember("vmstate"));

  // Another machine naming this VM (its providerID is stale: PVE reused the VMID) gets
  // NOT_FOUND and makes nothing.
  const std::string other_uid = "a1b2c3d4-0000-4000-8000-0000000000f7";
  const std::string impostor = withProviderId(machine("other", other_uid, ""), vmid);
  out = driver_->snapshot(snapshotRequest("create", impostor, "intruder"), other_uid);
  EXPECT_EQ(out.code, BANLIEUE_NOT_FOUND) << out.reason << ": " << out.message;
  out = driver_->snapshot(snapshotRequest("delete", impostor, "disk-only", "disk-only"), other_uid);
  EXPECT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_EQ(snapshotCount(fake_->state(), vmid), 2) << "a snapshot of another machine's VM changed";

  remove(object);
  EXPECT_EQ(vmById(fake_->state(), vmid), nullptr) << "the guest with snapshots was not destroyed";
  out = driver_->snapshotOnce(snapshotRequest("list", object, ""), uid);
  EXPECT_EQ(out.code, BANLIEUE_NOT_FOUND) << out.reason << ": " << out.message;
  EXPECT_EQ(out.reason, "VMNotFound") << out.message;
  out = driver_->snapshotOnce(snapshotRequest("create", object, "after"), uid);
  EXPECT_EQ(out.code, BANLIEUE_NOT_FOUND) << out.reason << ": " << out.message;
  out = driver_->snapshotOnce(snapshotRequest("delete", object, "disk-only", "disk-only"), uid);
  EXPECT_TRUE(out.ok()) << "the VM took its snapshots with it: " << out.reason << ": "
                        << out.message;
}

}  // namespace
}  // namespace banlieue::proxmox::testing
