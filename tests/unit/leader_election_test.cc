// Leader election on the in-memory client with a fake clock: acquisition, expiry judged on
// the candidate's own clock, renewal, optimistic conflicts, stepping down, release.
#include "host/runtime/leader_election.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace banlieue::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeKubeClient;
namespace json = sdk::json;

LeaderElectionConfig config(const std::string& identity) {
  LeaderElectionConfig c;
  c.lease_namespace = "banlieue-system";
  c.lease_name = "banlieue-controller";
  c.identity = identity;
  return c;
}

std::string holder(FakeKubeClient& client) {
  auto lease = client.get(kube::resources::kLease, "banlieue-system", "banlieue-controller", "");
  return lease.ok() ? json::stringOr(&*lease, "spec.holderIdentity") : "<none>";
}

int64_t transitions(FakeKubeClient& client) {
  auto lease = client.get(kube::resources::kLease, "banlieue-system", "banlieue-controller", "");
  return lease.ok() ? json::integer(&*lease, "spec.leaseTransitions").value_or(-1) : -1;
}

bool eventually(const std::function<bool()>& probe) {
  for (int i = 0; i < 500; ++i) {
    if (probe()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return probe();
}

TEST(LeaderElectionTest, TheFirstCandidateCreatesTheLease) {
  FakeKubeClient client;
  FakeClock clock;
  LeaderElector a(client, config("a"), clock);
  EXPECT_TRUE(a.tryAcquireOrRenew());
  EXPECT_EQ(holder(client), "a");
  EXPECT_EQ(transitions(client), 0);
}

TEST(LeaderElectionTest, AnotherCandidateWaitsALeaseDurationOnItsOwnClock) {
  FakeKubeClient client;
  FakeClock clock;
  LeaderElector a(client, config("a"), clock);
  LeaderElector b(client, config("b"), clock);
  ASSERT_TRUE(a.tryAcquireOrRenew());
  EXPECT_FALSE(b.tryAcquireOrRenew()) << "held and fresh";
  EXPECT_EQ(b.observedHolder(), "a");
  clock.advance(14s);
  EXPECT_FALSE(b.tryAcquireOrRenew()) << "not yet 15 s since b saw the record change";
  clock.advance(2s);
  EXPECT_TRUE(b.tryAcquireOrRenew()) << "a stopped renewing: the lease expired";
  EXPECT_EQ(holder(client), "b");
  EXPECT_EQ(transitions(client), 1);
}

TEST(LeaderElectionTest, RenewalKeepsOthersOut) {
  FakeKubeClient client;
  FakeClock clock;
  LeaderElector a(client, config("a"), clock);
  LeaderElector b(client, config("b"), clock);
  ASSERT_TRUE(a.tryAcquireOrRenew());
  for (int i = 0; i < 20; ++i) {
    clock.advance(2s);
    ASSERT_TRUE(a.tryAcquireOrRenew());
    ASSERT_FALSE(b.tryAcquireOrRenew()) << "after " << (i + 1) * 2 << " s";
  }
  EXPECT_EQ(transitions(client), 0);
  EXPECT_EQ(b.attempts(), 20) << "every attempt counts, failed ones too";
}

TEST(LeaderElectionTest, AConcurrentWriteMakesTheLoserBackOff) {
  FakeKubeClient client;
  FakeClock clock;
  LeaderElector a(client, config("a"), clock);
  LeaderElector b(client, config("b"), clock);
  ASSERT_TRUE(a.tryAcquireOrRenew());
  clock.advance(16s);
  ASSERT_FALSE(b.tryAcquireOrRenew()) << "first sight of the record starts b's own expiry clock";
  clock.advance(16s);
  // Just before b writes, a renews: b's read is stale and its update must conflict.
  bool raced = false;
  client.failNext([&](const std::string& verb, const std::string&) {
    if (verb == "update" && !raced) {
      raced = true;
      client.failNext(nullptr);
      EXPECT_TRUE(a.tryAcquireOrRenew());
    }
    return Status::ok();
  });
  EXPECT_FALSE(b.tryAcquireOrRenew());
  EXPECT_TRUE(raced);
  EXPECT_EQ(holder(client), "a");
}

TEST(LeaderElectionTest, TheLeaderStepsDownWhenRenewalFailsPastTheDeadline) {
  FakeKubeClient client;
  FakeClock clock;
  auto c = config("a");
  std::atomic<bool> stopped_leading{false};
  c.on_stopped_leading = [&] { stopped_leading = true; };
  LeaderElector a(client, c, clock);
  std::atomic<bool> stop{false};
  auto running = std::async(std::launch::async, [&] { a.run(stop); });
  ASSERT_TRUE(eventually([&] { return a.isLeader(); }));
  client.failNext([](const std::string&, const std::string&) {
    return error(Code::kUnavailable, "ConnectionFailed", "apiserver unreachable");
  });
  // Time moves a second at a time until the leader gives up, however long its thread takes to
  // notice each step; the clock never moved before the failures began, so its last renewal was
  // at the start and it must not give up before the renew deadline.
  std::chrono::nanoseconds failing_for{0};
  ASSERT_TRUE(eventually([&] {
    if (stopped_leading.load()) return true;
    clock.advance(1s);
    failing_for += 1s;
    return false;
  })) << "still leading after "
      << failing_for.count() / 1000000000 << " s of failed renewals";
  EXPECT_GE(failing_for, c.renew_deadline);
  EXPECT_FALSE(a.isLeader());
  EXPECT_EQ(running.wait_for(5s), std::future_status::ready) << "run() returns after stepping down";
  stop = true;
}

TEST(LeaderElectionTest, ACleanStopReleasesTheLease) {
  FakeKubeClient client;
  FakeClock clock;
  LeaderElector a(client, config("a"), clock);
  std::atomic<bool> stop{false};
  auto running = std::async(std::launch::async, [&] { a.run(stop); });
  ASSERT_TRUE(eventually([&] { return a.isLeader(); }));
  stop = true;
  ASSERT_EQ(running.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(holder(client), "");
  LeaderElector b(client, config("b"), clock);
  EXPECT_TRUE(b.tryAcquireOrRenew()) << "no need to wait for expiry after a release";
}

}  // namespace
}  // namespace banlieue::runtime
