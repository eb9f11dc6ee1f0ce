// Leader election against an API server that hangs instead of refusing: every request of a
// renewal carries the time left before renewDeadline, and the leader stops leading by
// renewDeadline after its last successful renewal even while a request is still hanging.
// Bounds come from the configured durations; time moves only on a fake clock.
#include "host/kube/client.h"
#include "host/runtime/leader_election.h"
#include "tests/support/fake_kube_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

namespace banlieue::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeKubeClient;

LeaderElectionConfig config(const std::string& identity) {
  LeaderElectionConfig c;
  c.lease_namespace = "banlieue-system";
  c.lease_name = "banlieue-provider";
  c.identity = identity;
  return c;
}

bool eventually(const std::function<bool()>& probe) {
  for (int i = 0; i < 1000; ++i) {
    if (probe()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return probe();
}

// Moves fake time by `step` only while the elector sleeps on the clock and no request is being
// served other than `hanging` ones: however slowly its threads run (a loaded machine, TSan), a
// renewal is never starved of the budget it was given by time it had no chance to use. Returns
// whether it moved time.
bool stepWhileIdle(FakeClock& clock, const FakeKubeClient& client, int hanging,
                   std::chrono::nanoseconds step) {
  bool idle = clock.sleeping() > 0 && client.inFlight() == hanging;
  if (idle) clock.advance(step);
  std::this_thread::sleep_for(1ms);  // lets the elector's threads observe the fake time
  return idle;
}

// A request that never gets an answer until released (an apiserver that accepts the
// connection and then stalls), whatever deadline the caller gave it.
class Hang {
 public:
  void block() {
    std::unique_lock lock(mutex_);
    ++blocked_;
    cv_.wait(lock, [&] { return released_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }
  int blocked() {
    std::lock_guard lock(mutex_);
    return blocked_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = false;
  int blocked_ = 0;
};

TEST(LeaderElectionFaultsTest, AHangingRenewalStepsDownByTheRenewDeadline) {
  FakeKubeClient client;
  FakeClock clock;
  auto c = config("a");
  std::mutex mu;
  Clock::TimePoint stepped_down_at{};
  std::atomic<bool> stepped_down{false};
  c.on_stopped_leading = [&] {
    std::lock_guard lock(mu);
    stepped_down_at = clock.now();
    stepped_down = true;
  };
  LeaderElector a(client, c, clock);
  std::atomic<bool> stop{false};
  auto running = std::async(std::launch::async, [&] { a.run(stop); });
  ASSERT_TRUE(eventually([&] { return a.isLeader(); }));

  // Renewals succeed for a while, then the apiserver stalls on the next one.
  Hang hang;
  std::atomic<Clock::TimePoint> last_renewal_began{clock.now()};  // acquisition counts as one
  std::atomic<int> renewals{0};
  std::atomic<int> requests{0};
  client.failNext([&](const std::string& verb, const std::string&) {
    ++requests;
    if (renewals.load() >= 3) {
      hang.block();
      return Status::ok();
    }
    if (verb == "get") last_renewal_began = clock.now();
    if (verb == "update") ++renewals;
    return Status::ok();
  });
  constexpr auto kStep = 250ms;
  auto give_up = std::chrono::steady_clock::now() + 20s;
  for (int steps = 0; steps < 400 && !stepped_down && std::chrono::steady_clock::now() < give_up;) {
    // Once a renewal hangs and renewDeadline has passed since the last one began (the elector's
    // own record of that is no later than this test's), the elector is due to step down: time
    // stands still from here, or a waiter that was woken and not yet scheduled would see the
    // clock moved on further, measuring the machine's load instead of the elector (CI saw
    // 10.5 s against a 10.25 s bound under ASan on 2 busy cores).
    if (hang.blocked() > 0 && clock.now() >= last_renewal_began.load() + c.renew_deadline) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    // A renewal due by the fake clock starts on a thread of its own, which a loaded machine
    // may not run for a while: until its first request, the elector only looks idle. Time
    // waits for it (bounded, in case it is not due after all), or the clock would run the
    // renew deadline out before the attempt could begin (seen under ASan on 2 busy cores).
    if (hang.blocked() == 0 && clock.now() >= last_renewal_began.load() + c.retry_period) {
      const int before = requests.load();
      const auto wait_until = std::chrono::steady_clock::now() + 500ms;
      while (requests.load() == before && !stepped_down &&
             std::chrono::steady_clock::now() < wait_until) {
        std::this_thread::sleep_for(1ms);
      }
    }
    if (stepWhileIdle(clock, client, hang.blocked(), kStep)) ++steps;
  }
  bool down = eventually([&] { return stepped_down.load(); });
  hang.release();
  ASSERT_TRUE(down) << "still leading with a renewal hanging";
  EXPECT_GE(hang.blocked(), 1);
  EXPECT_FALSE(a.isLeader());
  {
    std::lock_guard lock(mu);
    EXPECT_LE(stepped_down_at - last_renewal_began.load(), c.renew_deadline + kStep)
        << "stepped down later than renewDeadline after the last renewal began";
    EXPECT_LT(stepped_down_at - last_renewal_began.load(), c.lease_duration)
        << "another candidate could have taken the Lease already";
  }
  EXPECT_EQ(running.wait_for(30s), std::future_status::ready);
  stop = true;
}

TEST(LeaderElectionFaultsTest, EveryRenewalRequestIsBoundedByTheTimeLeft) {
  FakeKubeClient client;
  FakeClock clock;
  auto c = config("a");
  LeaderElector a(client, c, clock);
  std::atomic<bool> stop{false};
  auto running = std::async(std::launch::async, [&] { a.run(stop); });
  ASSERT_TRUE(eventually([&] { return a.isLeader(); }));
  std::mutex mu;
  std::vector<std::chrono::steady_clock::duration> budgets;
  client.failNext([&](const std::string&, const std::string& plural) {
    if (plural == "leases") {
      std::lock_guard lock(mu);
      budgets.push_back(kube::RequestDeadline::current() - std::chrono::steady_clock::now());
    }
    return Status::ok();
  });
  auto collected = [&] {
    std::lock_guard lock(mu);
    return budgets.size() >= 4;
  };
  auto give_up = std::chrono::steady_clock::now() + 20s;
  for (int steps = 0; steps < 40 && !collected() && std::chrono::steady_clock::now() < give_up;) {
    if (stepWhileIdle(clock, client, 0, 250ms)) ++steps;
  }
  ASSERT_TRUE(eventually(collected));
  EXPECT_TRUE(a.isLeader()) << "a renewal failed although every request was answered at once";
  stop = true;
  ASSERT_EQ(running.wait_for(30s), std::future_status::ready);
  std::lock_guard lock(mu);
  for (auto budget : budgets) {
    EXPECT_GT(budget, 0ms);
    EXPECT_LE(budget, c.renew_deadline) << "a renewal request may outlive renewDeadline";
  }
}

}  // namespace
}  // namespace banlieue::runtime
