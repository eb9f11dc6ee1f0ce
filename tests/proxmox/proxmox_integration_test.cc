// Drives the real libbanlieue-provider-proxmox.so through the C ABI (dlopen + the SDK's fake
// host) against the fake PVE API (fake_pve.py), and checks the fake's own state independently
// of the plugin's answers. Every test leaves no guest behind.
#include "tests/abi/run_banlieue.h"
#include "tests/proxmox/fake_pve.h"
#include "tests/proxmox/plugin_driver.h"
#include "tests/proxmox/proxmox_fixture.h"
#include "tests/support/build_paths.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/testing/fake_host.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

namespace banlieue::proxmox::testing {
namespace {

namespace json = sdk::json;
using sdk::abi::CallOutcome;

TEST_F(ProxmoxTest, WrongTokenFailsTheInstanceWithAuthenticationFailed) {
  Driver other;
  CallOutcome created = other.create(fake_->instanceConfig("not-the-secret", kCapabilities));
  EXPECT_EQ(created.code, BANLIEUE_UNAUTHENTICATED);
  EXPECT_EQ(created.reason, "AuthenticationFailed");
  EXPECT_NE(created.message.find("invalid token value"), std::string::npos) << created.message;
  EXPECT_EQ(created.message.find("not-the-secret"), std::string::npos) << "secret leaked";
}

TEST_F(ProxmoxTest, PasswordSecretUsesTicketsWithCsrfOnWritesAndRenewsThem) {
  Driver ticketed;
  CallOutcome created = ticketed.create(fake_->ticketConfig(FakePve::kPassword, kCapabilities));
  ASSERT_TRUE(created.ok()) << created.reason << ": " << created.message;
  EXPECT_EQ(fake_->state()["logins"].GetInt(), 1);
  // Clone, config, start, stop and destroy are writes: the fake refuses them without the
  // ticket's CSRFPreventionToken.
  const std::string object = machine("ticket", "a1b2c3d4-0000-4000-8000-0000000000c1", "");
  CallOutcome out = ticketed.drive("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  EXPECT_EQ(fake_->state()["logins"].GetInt(), 1) << "one ticket serves every request";

  // PVE stops honouring the ticket: the client logs in again instead of failing.
  fake_->fake("expire-tickets");
  CallOutcome gone = ticketed.drive("finalize", object);
  EXPECT_TRUE(gone.ok()) << gone.reason << ": " << gone.message;
  EXPECT_GE(fake_->state()["logins"].GetInt(), 2);

  Driver wrong;
  created = wrong.create(fake_->ticketConfig("not-the-password", kCapabilities));
  EXPECT_EQ(created.code, BANLIEUE_UNAUTHENTICATED);
  EXPECT_EQ(created.reason, "AuthenticationFailed") << created.message;
  EXPECT_NE(created.message.find("authentication failure"), std::string::npos) << created.message;
  EXPECT_EQ(created.message.find("not-the-password"), std::string::npos) << "password leaked";
}

TEST_F(ProxmoxTest, UntrustedCertificateIsRefused) {
  Driver other;
  CallOutcome created = other.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities, false));
  EXPECT_EQ(created.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(created.reason, "ConnectFailed") << created.message;
}

TEST_F(ProxmoxTest, IntrospectListsOnlineNodesWithTheirClasses) {
  CallOutcome out = driver_->introspect();
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto body = json::parse(out.body, "introspect");
  const auto& fds = body["failureDomains"];
  ASSERT_EQ(fds.Size(), 2u) << out.body;  // pve3 is offline
  EXPECT_STREQ(fds[0]["name"].GetString(), "pve1");
  EXPECT_STREQ(fds[1]["name"].GetString(), "pve2");
  EXPECT_STREQ(fds[0]["attributes"]["raw"]["node"].GetString(), "pve1");
  EXPECT_EQ(fds[0]["attributes"]["availableStorageClasses"].Size(), 2u) << out.body;
  EXPECT_STREQ(fds[0]["attributes"]["availableNetworkClasses"][0].GetString(), "prod");

  fake_->fake("node?name=pve2&status=offline");
  out = driver_->introspect();
  ASSERT_TRUE(out.ok()) << out.message;
  EXPECT_EQ(json::parse(out.body, "introspect")["failureDomains"].Size(), 1u);
}

TEST_F(ProxmoxTest, IntrospectNamesAnUnknownStorageAndBridge) {
  std::string provider =
      R"({"provider":{"metadata":{"name":"pve"},"spec":{"capabilities":)"
      R"({"storageClasses":[{"name":"fast","target":{"storage":"ceph-nvme"}}]}}}})";
  CallOutcome out = driver_->introspect(provider);
  EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(out.reason, "StorageNotFound");
  EXPECT_NE(out.message.find("ceph-nvme"), std::string::npos) << out.message;

  provider = R"({"provider":{"metadata":{"name":"pve"},"spec":{"capabilities":)"
             R"({"networkClasses":[{"name":"dmz","target":{"bridge":"vmbr9"}}]}}}})";
  out = driver_->introspect(provider);
  EXPECT_EQ(out.reason, "BridgeNotFound") << out.message;
}

TEST_F(ProxmoxTest, CreateConfiguresStartsPowersOffAndDeletes) {
  const std::string nic =
      R"(,"network":[{"name":"eth0","bridge":"vmbr1","vlan":20,"model":"virtio",)"
      R"("ipam":{"static":{"address":"10.1.2.3","prefix":24,"gateway":"10.1.2.1",)"
      R"("nameservers":["10.1.2.53"]}}}],"osDiskSizeGiB":20,"dataDisks":[{"name":"data","sizeGiB":5}])";
  const std::string uid = "a1b2c3d4-0000-4000-8000-000000000001";
  CallOutcome out = driver_->drive("reconcile", machine("web-1", uid, nic));
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto reply = json::parse(out.body, "reply");
  EXPECT_STREQ(reply["status"]["providerID"].GetString(), "proxmox://pve1/100");
  EXPECT_EQ(reply["status"]["vmid"].GetInt(), 100);
  EXPECT_STREQ(reply["status"]["observedPowerState"].GetString(), "PoweredOn");
  EXPECT_TRUE(reply["status"]["initialization"]["provisioned"].GetBool());
  ASSERT_EQ(reply["status"]["addresses"].Size(), 1u) << out.body;  // from the guest agent
  EXPECT_STREQ(reply["status"]["addresses"][0]["address"].GetString(), "10.0.0.100");
  EXPECT_FALSE(reply.HasMember("operation")) << "a finished reconcile leaves no token";

  auto state = fake_->state();
  const auto* vm = guest(state, "web-1");
  ASSERT_NE(vm, nullptr);
  const auto& config = (*vm)["config"];
  EXPECT_STREQ((*vm)["status"].GetString(), "running");
  EXPECT_EQ(std::stoi(json::serialize(config["cores"])), 2) << "the template's 1 vCPU stayed";
  EXPECT_EQ(std::stoi(json::serialize(config["memory"])), 2048);
  EXPECT_NE(std::string(config["net0"].GetString()).find("bridge=vmbr1,tag=20"), std::string::npos);
  EXPECT_STREQ(config["ipconfig0"].GetString(), "ip=10.1.2.3/24,gw=10.1.2.1");
  EXPECT_STREQ(config["nameserver"].GetString(), "10.1.2.53");
  EXPECT_STREQ(config["ide2"].GetString(), "local:cloudinit");
  EXPECT_NE(std::string(config["scsi0"].GetString()).find("size=20G"), std::string::npos);
  EXPECT_STREQ(config["scsi1"].GetString(), "local-lvm:5");
  EXPECT_NE(std::string(config["tags"].GetString()).find("banlieue-" + uid), std::string::npos);

  // A second reconcile of the converged machine changes nothing and clones nothing.
  out = driver_->drive("reconcile", machine("web-1", uid, nic));
  ASSERT_TRUE(out.ok()) << out.message;
  EXPECT_EQ(fake_->guestCount(), 1);

  out = driver_->drive("reconcile", machine("web-1", uid, nic, "PoweredOff"));
  ASSERT_TRUE(out.ok()) << out.message;
  EXPECT_STREQ(json::parse(out.body, "r")["status"]["observedPowerState"].GetString(),
               "PoweredOff");
  state = fake_->state();
  EXPECT_STREQ((*guest(state, "web-1"))["status"].GetString(), "stopped");

  out = driver_->drive("reconcile", machine("web-1", uid, nic, "Suspended"));
  ASSERT_TRUE(out.ok()) << out.message;
  EXPECT_STREQ(json::parse(out.body, "r")["status"]["observedPowerState"].GetString(), "Suspended");

  // Delete stops the running guest first, then destroys it (no orphaned running VM).
  remove(machine("web-1", uid, nic));
  EXPECT_EQ(guest(fake_->state(), "web-1"), nullptr);
}

TEST_F(ProxmoxTest, ALinkedCloneSharesTheTemplatesBaseDisk) {
  const std::string object = machine("linked", "a1b2c3d4-0000-4000-8000-0000000000d1",
                                     R"(,"cloneMode":"Linked","osDiskSizeGiB":12)");
  CallOutcome out = driver_->drive("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  auto state = fake_->state();
  const auto* vm = guest(state, "linked");
  ASSERT_NE(vm, nullptr);
  const std::string disk = (*vm)["config"]["scsi0"].GetString();
  EXPECT_EQ(disk.rfind("local-lvm:base-9000-disk-0/vm-", 0), 0u) << disk;
  EXPECT_NE(disk.find("size=12G"), std::string::npos) << disk;
  EXPECT_EQ(std::stoi(json::serialize((*vm)["config"]["cores"])), 2);
  remove(object);

  out = driver_->once("reconcile", machine("bad-mode", "a1b2c3d4-0000-4000-8000-0000000000d2",
                                           R"(,"cloneMode":"Thin")"));
  EXPECT_EQ(out.reason, "InvalidSpec") << out.message;
}

TEST_F(ProxmoxTest, ARetryWithoutTheTokenNeverClonesTwice) {
  const std::string object = machine("idem", "a1b2c3d4-0000-4000-8000-000000000002", "");
  CallOutcome first = driver_->once("reconcile", object);
  ASSERT_EQ(first.code, BANLIEUE_IN_PROGRESS) << first.message;
  // The host lost the token (a crash): the next call finds the clone by name + owner marker.
  CallOutcome second = driver_->once("reconcile", object);
  EXPECT_EQ(second.code, BANLIEUE_IN_PROGRESS) << second.reason << ": " << second.message;
  EXPECT_EQ(fake_->guestCount(), 1);
  CallOutcome done = driver_->drive("reconcile", object);
  ASSERT_TRUE(done.ok()) << done.message;
  EXPECT_EQ(fake_->guestCount(), 1);
  remove(object);
}

// A provisioned guest that vanished out of band is not silently recreated (its disks may hold
// data someone wants back): the user deletes the ProxmoxMachine to get a fresh one, as vSphere.
TEST_F(ProxmoxTest, AProvisionedGuestThatVanishedIsNotRecreated) {
  const std::string object = machine("gone", "a1b2c3d4-0000-4000-8000-0000000000e1", "");
  CallOutcome out = driver_->drive("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();
  fake_->fake("vanish?vmid=" + std::to_string(vmid));
  ASSERT_EQ(fake_->guestCount(), 0);

  out = driver_->once("reconcile", provisioned(object, vmid));
  EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION) << out.reason << ": " << out.message;
  EXPECT_EQ(out.reason, "BackendMissing");
  EXPECT_NE(out.message.find("VM " + std::to_string(vmid)), std::string::npos) << out.message;
  EXPECT_EQ(fake_->guestCount(), 0) << "recreated behind the user's back";
  remove(provisioned(object, vmid));
}

// A /cluster/resources answer that is not a list says nothing about which guests exist: it is
// an error, never "no such guest" (which would clone a second VM, or release the finalizer of a
// VM that still runs).
TEST_F(ProxmoxTest, AMalformedGuestListingIsAnErrorNotAnAbsence) {
  const std::string object = machine("listed", "a1b2c3d4-0000-4000-8000-0000000000e2", "");
  CallOutcome out = driver_->drive("reconcile", object);
  ASSERT_TRUE(out.ok()) << out.reason << ": " << out.message;
  const int vmid = json::parse(out.body, "reply")["status"]["vmid"].GetInt();

  fake_->fake("malformed-resources?count=1");
  out = driver_->once("reconcile", provisioned(object, vmid));
  EXPECT_EQ(out.code, BANLIEUE_UNAVAILABLE) << out.reason << ": " << out.message;
  EXPECT_EQ(out.reason, "MalformedReply");
  EXPECT_EQ(fake_->guestCount(), 1);

  fake_->fake("malformed-resources?count=1");
  out = driver_->once("finalize", provisioned(object, vmid));
  EXPECT_EQ(out.code, BANLIEUE_UNAVAILABLE) << out.reason << ": " << out.message;
  EXPECT_EQ(fake_->guestCount(), 1) << "the guest must still be there";
  remove(provisioned(object, vmid));
}

TEST_F(ProxmoxTest, FiveParallelClonesOfOneTemplateAllSucceed) {
  // Five Provider calls at once, each its own host thread: PVE's clone lock on template 9000
  // turns all but one into "can't lock file"; the plugin's backoff and IN_PROGRESS retries
  // must get every one through.
  // A thread that never got as far as its reconcile leaves no outcome, and one whose instance
  // was refused reports that refusal: neither reads as success.
  std::vector<std::thread> threads;
  std::vector<std::optional<CallOutcome>> outcomes(5);
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      Driver d;
      CallOutcome created = d.create(fake_->instanceConfig(FakePve::kSecret, kCapabilities));
      if (!created.ok()) {
        outcomes[i] = created;
        return;
      }
      outcomes[i] = d.drive("reconcile",
                            machine("par-" + std::to_string(i),
                                    "a1b2c3d4-0000-4000-8000-00000000001" + std::to_string(i), ""));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 5; ++i) {
    if (!outcomes[i]) {
      ADD_FAILURE() << "thread " << i << " never reported";
      continue;
    }
    EXPECT_EQ(outcomes[i]->codeName(), "OK")
        << i << ": " << outcomes[i]->reason << ": " << outcomes[i]->message;
  }
  EXPECT_EQ(fake_->guestCount(), 5);
  for (int i = 0; i < 5; ++i) {
    remove(machine("par-" + std::to_string(i),
                   "a1b2c3d4-0000-4000-8000-00000000001" + std::to_string(i), ""));
  }
}

TEST_F(ProxmoxTest, OfflineNodeUnknownStorageAndMissingBridgeAreNamed) {
  CallOutcome out = driver_->once(
      "reconcile", machine("off", "a1b2c3d4-0000-4000-8000-000000000003", "", "PoweredOn", "pve3"));
  EXPECT_EQ(out.code, BANLIEUE_UNAVAILABLE);
  EXPECT_EQ(out.reason, "NodeOffline") << out.message;

  std::string object = machine("st", "a1b2c3d4-0000-4000-8000-000000000004", "");
  object.replace(object.find("\"local-lvm\""), 11, "\"ceph-nvme\"");
  out = driver_->once("reconcile", object);
  EXPECT_EQ(out.code, BANLIEUE_FAILED_PRECONDITION);
  EXPECT_EQ(out.reason, "StorageNotFound") << out.message;

  out = driver_->once("reconcile", machine("br", "a1b2c3d4-0000-4000-8000-000000000005",
                                           R"(,"network":[{"name":"eth0","bridge":"vmbr7"}])"));
  EXPECT_EQ(out.reason, "BridgeNotFound") << out.message;

  out = driver_->once("reconcile", R"({"metadata":{"name":"x","uid":"u"},"spec":{"node":"pve1"}})");
  EXPECT_EQ(out.code, BANLIEUE_INVALID_ARGUMENT);
  EXPECT_EQ(out.reason, "InvalidSpec") << out.message;
  EXPECT_EQ(fake_->guestCount(), 0);
}

TEST_F(ProxmoxTest, VmidCollisionIsRetriedThenNamed) {
  const std::string first = machine("c1", "a1b2c3d4-0000-4000-8000-000000000006", "", "PoweredOff");
  ASSERT_TRUE(driver_->drive("reconcile", first).ok());
  // Two stale nextid answers: the plugin asks again and clones onto a free VMID.
  fake_->fake("stale-nextid?count=2");
  const std::string second =
      machine("c2", "a1b2c3d4-0000-4000-8000-000000000007", "", "PoweredOff");
  CallOutcome out = driver_->drive("reconcile", second);
  EXPECT_TRUE(out.ok()) << out.reason << ": " << out.message;
  // PVE keeps offering taken ids: a specific reason, and no guest is created.
  fake_->fake("stale-nextid?count=100");
  const std::string third = machine("c3", "a1b2c3d4-0000-4000-8000-000000000008", "", "PoweredOff");
  out = driver_->once("reconcile", third);
  EXPECT_EQ(out.code, BANLIEUE_ALREADY_EXISTS);
  EXPECT_EQ(out.reason, "VmidCollision") << out.message;
  EXPECT_EQ(fake_->guestCount(), 2);
  fake_->fake("stale-nextid?count=0");
  remove(first);
  remove(second);
  remove(third);
}

TEST_F(ProxmoxTest, AFailingTaskGivesTaskFailedAndIsNotReadAgain) {
  const std::string uid = "a1b2c3d4-0000-4000-8000-000000000009";
  ASSERT_TRUE(driver_->drive("reconcile", machine("bad", uid, "", "PoweredOff")).ok());
  auto state = fake_->state();
  const int vmid = (*guest(state, "bad"))["vmid"].GetInt();
  fake_->fake("config?vmid=" + std::to_string(vmid) + "&key=args&value=fail-start");
  CallOutcome out = driver_->drive("reconcile", machine("bad", uid, ""));
  EXPECT_EQ(out.code, BANLIEUE_ABORTED);
  EXPECT_EQ(out.reason, "TaskFailed");
  EXPECT_NE(out.message.find("QEMU exited with code 1"), std::string::npos) << out.message;
  remove(machine("bad", uid, ""));
}

// `banlieue plugin check` (the conformance entry point) on the real plugin directory,
// connected to the fake: every slot, including reconcile/finalize of the sample and its
// snapshots (ABI 1.2).
TEST_F(ProxmoxTest, PluginCheckPassesAgainstTheFake) {
  char path[] = "/tmp/banlieue-proxmox-config-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << fake_->instanceConfig(FakePve::kSecret, kCapabilities);
  const auto run = banlieue::testing::runBanlieue(
      std::string("plugin check ") + BANLIEUE_PROXMOX_PLUGIN_DIR + " --config " + path);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // The snapshot step ran on the guest the reconcile step made (create, create again, list,
  // revert, delete twice), not merely "not offered".
  EXPECT_NE(run.output.find("PASS  snapshot ProxmoxMachine"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("deleted twice"), std::string::npos) << run.output;
  std::remove(path);
}

}  // namespace
}  // namespace banlieue::proxmox::testing
