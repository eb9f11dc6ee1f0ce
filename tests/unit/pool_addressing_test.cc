// Static addresses for pool members (issue #20, VirtualMachinePool spec.addressing): the draw
// order, the entry forms, what is skipped and what is reported.
#include "host/roles/controller/pool_addressing.h"

#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

api::PoolAddressing addressing(std::vector<std::string> pool, const std::string& gateway = "") {
  api::PoolAddressing a;
  a.interface = "eth0";
  a.pool = std::move(pool);
  a.prefix = 24;
  a.gateway = gateway;
  return a;
}

TEST(PoolAddressingTest, EntriesAreDrawnInListOrderEachFromLowToHigh) {
  auto a = addressing({"192.0.2.20", "192.0.2.10-192.0.2.11", "192.0.2.0/30"});
  EXPECT_EQ(drawAddress(a, {}).address, "192.0.2.20");
  EXPECT_EQ(drawAddress(a, {"192.0.2.20"}).address, "192.0.2.10");
  EXPECT_EQ(drawAddress(a, {"192.0.2.20", "192.0.2.10"}).address, "192.0.2.11");
  // A /30 gives its two host addresses, not its network and broadcast ones.
  EXPECT_EQ(drawAddress(a, {"192.0.2.20", "192.0.2.10", "192.0.2.11"}).address, "192.0.2.1");
  auto all = drawAddress(a, {"192.0.2.20", "192.0.2.10", "192.0.2.11", "192.0.2.1", "192.0.2.2"});
  EXPECT_FALSE(all.address.has_value());
  EXPECT_EQ(all.usable, 5);
  EXPECT_TRUE(all.unparsable.empty());
}

TEST(PoolAddressingTest, AFreedAddressIsDrawnAgainBeforeLaterOnes) {
  auto a = addressing({"192.0.2.10-192.0.2.19"});
  EXPECT_EQ(drawAddress(a, {"192.0.2.10", "192.0.2.12"}).address, "192.0.2.11");
}

TEST(PoolAddressingTest, TheGatewayIsNeverHandedOut) {
  auto a = addressing({"192.0.2.1-192.0.2.3"}, "192.0.2.1");
  EXPECT_EQ(drawAddress(a, {}).address, "192.0.2.2");
}

TEST(PoolAddressingTest, AnInvertedRangeIsSkippedAndAnUnparsableEntryIsNamed) {
  auto a = addressing(
      {"192.0.2.9-192.0.2.5", "web-servers", "192.0.2.300", "192.0.2.0/33", "192.0.2.7"});
  auto draw = drawAddress(a, {});
  EXPECT_EQ(draw.address, "192.0.2.7");
  EXPECT_EQ(draw.unparsable,
            (std::vector<std::string>{"web-servers", "192.0.2.300", "192.0.2.0/33"}));
  EXPECT_EQ(draw.usable, 1);
}

TEST(PoolAddressingTest, ASmallCidrKeepsEveryAddressAndAWideOneCostsOnlyWhatIsHeld) {
  EXPECT_EQ(drawAddress(addressing({"192.0.2.8/31"}), {"192.0.2.8"}).address, "192.0.2.9");
  EXPECT_EQ(drawAddress(addressing({"192.0.2.5/32"}), {}).address, "192.0.2.5");
  auto wide = drawAddress(addressing({"10.0.0.0/8"}), {"10.0.0.1", "10.0.0.2"});
  EXPECT_EQ(wide.address, "10.0.0.3");
  EXPECT_EQ(wide.usable, (int64_t{1} << 24) - 2);
}

TEST(PoolAddressingTest, TheAddressLandsOnTheInterfacesOverrideWithTheSharedSettings) {
  auto a = addressing({"192.0.2.10"}, "192.0.2.1");
  a.nameservers = {"192.0.2.53"};
  a.domain = "pool.example";
  api::VirtualMachineSpec spec;
  spec.network_overrides.push_back({.name = "eth1", .static_ = {.address = "198.51.100.4"}});
  assignAddress(spec, a, "192.0.2.10");
  ASSERT_EQ(spec.network_overrides.size(), 2u);
  EXPECT_EQ(heldAddress(spec, "eth0"), "192.0.2.10");
  EXPECT_EQ(heldAddress(spec, "eth1"), "198.51.100.4");
  const auto& eth0 = spec.network_overrides[1].static_;
  EXPECT_EQ(eth0.prefix, 24);
  EXPECT_EQ(eth0.gateway, "192.0.2.1");
  EXPECT_EQ(eth0.nameservers, std::vector<std::string>{"192.0.2.53"});
  EXPECT_EQ(eth0.domain, "pool.example");
  // A template override for the same interface is replaced, not doubled.
  assignAddress(spec, a, "192.0.2.11");
  EXPECT_EQ(spec.network_overrides.size(), 2u);
  EXPECT_EQ(heldAddress(spec, "eth0"), "192.0.2.11");
  EXPECT_EQ(heldAddress(spec, "eth2"), "");
}

}  // namespace
}  // namespace banlieue::controller
