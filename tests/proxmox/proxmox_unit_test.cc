// The Proxmox plugin's logic that needs no PVE (the rest runs against fake_pve.py: label
// integration). When a ProxmoxMachine reply says the machine is settled
// (docs/provider-contract.md, "Settled replies"): the host then skips the passes that change
// none of its inputs, so a reply that settles too early leaves a change unfinished until the
// resync (what happened to a power-on in e2e_day2_test before replies said so).
#include "plugins/proxmox/src/machine.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace banlieue::proxmox
