// When a LibvirtMachine reply says the machine is settled (docs/provider-contract.md, "Settled
// replies"): the host then skips the passes that change none of its inputs, so a reply that
// settles too early leaves a change unfinished until the resync.
#include "plugins/libvirt/src/machine.h"

#include <gtest/gtest.h>

namespace banlieue::libvirt {
namespace {

// A running domain found as its spec asks, its agent answering with an address.
PassSummary runningAtRest() {
  return {.ok = true,
          .carried_token = false,
          .defined_now = false,
          .power_as_desired = true,
          .hardware_pending = false,
          .restarted = false,
          .running = true,
          .agent_answered = true,
          .has_addresses = true};
}

TEST(LibvirtMachineAtRest, OnlyAPassThatFoundItAsTheSpecAsksSettles) {
  EXPECT_TRUE(atRest(runningAtRest()));

  PassSummary off = runningAtRest();
  off.running = off.agent_answered = off.has_addresses = false;
  EXPECT_TRUE(atRest(off)) << "off as asked: nothing to wait for";
}

TEST(LibvirtMachineAtRest, AnythingBegunOrUnknownDoesNotSettle) {
  struct Case {
    const char* why;
    void (*change)(PassSummary&);
  };
  const Case cases[] = {
      {"a failed or IN_PROGRESS pass", [](PassSummary& p) { p.ok = false; }},
      {"a pass that carried a task's token (a shutdown, a restart)",
       [](PassSummary& p) { p.carried_token = true; }},
      {"a pass that defined the domain", [](PassSummary& p) { p.defined_now = true; }},
      {"a power state not yet the desired one", [](PassSummary& p) { p.power_as_desired = false; }},
      {"a resize the running guest lacks (held or restarting)",
       [](PassSummary& p) { p.hardware_pending = true; }},
      {"a restart this pass began", [](PassSummary& p) { p.restarted = true; }},
      {"a running guest whose agent has not answered",
       [](PassSummary& p) { p.agent_answered = false; }},
      {"a running guest without a known address", [](PassSummary& p) { p.has_addresses = false; }},
  };
  for (const auto& c : cases) {
    PassSummary pass = runningAtRest();
    c.change(pass);
    EXPECT_FALSE(atRest(pass)) << c.why;
  }
}

}  // namespace
}  // namespace banlieue::libvirt
