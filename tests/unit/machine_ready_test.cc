// The provider runtime's Ready of a machine object (issue #20): never True while the plugin
// says the running machine lacks the spec's hardware.
#include "host/roles/provider/machine_ready.h"

#include <gtest/gtest.h>

namespace banlieue::roles::provider {
namespace {

TEST(MachineReadyTest, InProgressAndUnprovisionedAreNotReady) {
  auto ready = machineReady(true, "clone of web-1", false, {}, 3);
  EXPECT_EQ(ready.status, "False");
  EXPECT_EQ(ready.reason, "InProgress");
  EXPECT_EQ(ready.message, "clone of web-1");
  EXPECT_EQ(ready.observed_generation, 3);
  EXPECT_EQ(machineReady(false, "", false, {}, 3).reason, "Provisioning");
}

TEST(MachineReadyTest, AProvisionedMachineIsReadyUnlessItsHardwareWaits) {
  EXPECT_EQ(machineReady(false, "", true, {}, 1).status, "True");
  EXPECT_EQ(machineReady(false, "", true, {{kHardwareApplied, "True", "Applied", "", 1}}, 1).status,
            "True");
  auto waiting = machineReady(
      false, "", true,
      {{"GuestReady", "True", "AgentUp", "", 1},
       {kHardwareApplied, "False", "RestartRequired", "the running guest lacks 4 vCPUs", 1}},
      1);
  EXPECT_EQ(waiting.status, "False");
  EXPECT_EQ(waiting.reason, "RestartRequired");
  EXPECT_NE(waiting.message.find("lacks 4 vCPUs"), std::string::npos) << waiting.message;
}

}  // namespace
}  // namespace banlieue::roles::provider
