// The Proxmox plugin's logic that needs no PVE (the rest runs against fake_pve.py: label
// integration). When a ProxmoxMachine reply says the machine is settled
// (docs/provider-contract.md, "Settled replies"): the host then skips the passes that change
// none of its inputs, so a reply that settles too early leaves a change unfinished until the
// resync (what happened to a power-on in e2e_day2_test before replies said so). And which
// guests the change feed names from two listings of the cluster (ADR 0057).
#include "plugins/proxmox/src/change_feed.h"
#include "plugins/proxmox/src/machine.h"

#include <banlieue/sdk/json.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace banlieue::proxmox {
namespace {

// A running guest found as its spec asks, its agent answering with an address.
PassSummary guestAtRest() {
  return {.carried_token = false,
          .changed_config = false,
          .pending_config = false,
          .power_as_desired = true,
          .powered_on = true,
          .agent_answered = true,
          .has_addresses = true};
}

TEST(ProxmoxMachineAtRest, OnlyAPassThatFoundTheGuestAsTheSpecAsksSettles) {
  EXPECT_TRUE(atRest(guestAtRest()));
  PassSummary off = guestAtRest();
  off.powered_on = off.agent_answered = off.has_addresses = false;
  EXPECT_TRUE(atRest(off)) << "off as asked: no agent to wait for";
}

TEST(ProxmoxMachineAtRest, AnythingInFlightChangedOrUnknownDoesNotSettle) {
  struct Case {
    const char* why;
    void (*change)(PassSummary&);
  };
  const Case cases[] = {
      {"the pass that saw a task end (clone, start, shutdown, reboot)",
       [](PassSummary& p) { p.carried_token = true; }},
      {"the pass that changed the config, a disk or the userData",
       [](PassSummary& p) { p.changed_config = true; }},
      {"changes PVE holds for the next boot (held, or a stopped guest's)",
       [](PassSummary& p) { p.pending_config = true; }},
      {"a power state not yet the desired one", [](PassSummary& p) { p.power_as_desired = false; }},
      {"a running guest whose agent does not answer",
       [](PassSummary& p) { p.agent_answered = false; }},
      {"a running guest without a known address", [](PassSummary& p) { p.has_addresses = false; }},
  };
  for (const auto& c : cases) {
    PassSummary pass = guestAtRest();
    c.change(pass);
    EXPECT_FALSE(atRest(pass)) << c.why;
  }
  PassSummary stopped_with_pending = guestAtRest();
  stopped_with_pending.powered_on = false;
  stopped_with_pending.pending_config = true;
  EXPECT_FALSE(atRest(stopped_with_pending)) << "pending changes of a stopped guest";
}

// Two /cluster/resources?type=vm answers, as PVE lists a guest: what a reconcile reports of it
// names it; its moving figures (uptime, cpu, mem, net, lock) and containers do not.
TEST(ProxmoxChangeFeed, NamesWhatAReconcileReportsNotWhatMerelyMoves) {
  auto listing = [](const std::string& entries) {
    return indexGuests(sdk::json::parse("[" + entries + "]", "listing"));
  };
  auto vm = [](int vmid, const std::string& node, const std::string& status,
               const std::string& more = "") {
    // `more` (",<member>...") first: of two members with one name, the first is read.
    return "{" + (more.empty() ? "" : more.substr(1) + ",") + R"("id":"qemu/)" +
           std::to_string(vmid) + R"(","type":"qemu","vmid":)" + std::to_string(vmid) +
           R"(,"node":")" + node + R"(","name":"web","status":")" + status +
           R"(","template":0,"maxcpu":2,"maxmem":2147483648,"maxdisk":10737418240,)"
           R"("tags":"banlieue-uid"})";
  };
  using Names = std::vector<std::string>;
  const auto before = listing(vm(100, "pve1", "running", R"(,"uptime":10,"mem":5)") + "," +
                              vm(101, "pve1", "stopped") + "," +
                              R"({"id":"lxc/200","type":"lxc","vmid":200,"node":"pve1",)"
                              R"("status":"running","uptime":10})");
  EXPECT_EQ(before.size(), 2u) << "a container is never a machine's guest";

  EXPECT_EQ(guestsThatChanged(before, listing(vm(100, "pve1", "running",
                                                 R"(,"uptime":20,"mem":7,"lock":"backup")") +
                                              "," + vm(101, "pve1", "stopped"))),
            Names{});
  EXPECT_EQ(guestsThatChanged(
                before, listing(vm(100, "pve1", "stopped") + "," + vm(101, "pve1", "stopped"))),
            Names{"proxmox://pve1/100"})
      << "stopped";
  EXPECT_EQ(guestsThatChanged(
                before, listing(vm(100, "pve1", "paused") + "," + vm(101, "pve1", "stopped"))),
            Names{"proxmox://pve1/100"})
      << "suspended: PVE lists QEMU's own status";
  EXPECT_EQ(guestsThatChanged(before, listing(vm(100, "pve1", "running") + "," +
                                              vm(101, "pve1", "stopped", R"(,"maxcpu":4)"))),
            Names{"proxmox://pve1/101"})
      << "its config edited";
  EXPECT_EQ(guestsThatChanged(
                before, listing(vm(100, "pve2", "running") + "," + vm(101, "pve1", "stopped"))),
            (Names{"proxmox://pve1/100", "proxmox://pve2/100"}))
      << "migrated: named as the machine's spec still knows it, and as it is now";
  EXPECT_EQ(guestsThatChanged(
                before, listing(vm(101, "pve1", "stopped") + "," + vm(102, "pve1", "stopped"))),
            (Names{"proxmox://pve1/100", "proxmox://pve1/102"}))
      << "one gone, one new";
}

}  // namespace
}  // namespace banlieue::proxmox
