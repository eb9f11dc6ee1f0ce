// Which unclaimed pool members are past their time (host/roles/controller/pool_expiry.h).
#include "host/roles/controller/pool_expiry.h"

#include <gtest/gtest.h>

namespace banlieue::controller {
namespace {

constexpr std::time_t kNow = 1'800'000'000;

TEST(PoolExpiryTest, AStuckMemberExpiresAtItsProvisioningTimeoutAndNotBefore) {
  std::vector<MemberAge> members{{.name = "web-0", .created = kNow - 1800},
                                 {.name = "web-1", .created = kNow - 100}};
  auto plan = planExpiries(members, 1800, std::nullopt, kNow);
  ASSERT_EQ(plan.expired.size(), 1u);
  EXPECT_EQ(plan.expired[0].name, "web-0");
  EXPECT_EQ(plan.expired[0].reason, "ProvisioningTimedOut");
  EXPECT_EQ(plan.next_check, kNow + 1700) << "web-1's deadline";
  EXPECT_TRUE(planExpiries(members, 0, std::nullopt, kNow).expired.empty()) << "0: no timeout";
}

TEST(PoolExpiryTest, AnIdleMemberIsRecycledFromWhenItBecameAvailable) {
  std::vector<MemberAge> members{
      {.name = "old", .available = true, .created = kNow - 9000, .available_since = kNow - 601},
      {.name = "fresh", .available = true, .created = kNow - 9000, .available_since = kNow - 10}};
  auto plan = planExpiries(members, 1800, 600, kNow);
  ASSERT_EQ(plan.expired.size(), 1u);
  EXPECT_EQ(plan.expired[0].name, "old");
  EXPECT_EQ(plan.expired[0].reason, "IdleExpired");
  EXPECT_EQ(plan.next_check, kNow + 590);
  EXPECT_TRUE(planExpiries(members, 1800, std::nullopt, kNow).expired.empty())
      << "without maxIdleSeconds an available member stays: its creation age does not count";
}

TEST(PoolExpiryTest, ClaimedAndTerminatingMembersAreNeverTouched) {
  std::vector<MemberAge> members{
      {.name = "claimed", .claimed = true, .created = kNow - 99999},
      {.name = "going", .terminating = true, .created = kNow - 99999},
      {.name = "bound", .claimed = true, .available = true, .available_since = kNow - 99999}};
  auto plan = planExpiries(members, 60, 60, kNow);
  EXPECT_TRUE(plan.expired.empty());
  EXPECT_FALSE(plan.next_check);
}

}  // namespace
}  // namespace banlieue::controller
