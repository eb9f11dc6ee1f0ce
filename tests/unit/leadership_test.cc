// roles::runWhileLeading on the in-memory client: the work runs only while leading, a stop
// joins the work before the Lease is released, and a lost Lease stops the work at once (and
// gives up on work that does not return in time).
#include "host/roles/common/leadership.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace banlieue::roles {
namespace {

using namespace std::chrono_literals;
using testing::FakeKubeClient;

runtime::LeaderElectionConfig config() {
  runtime::LeaderElectionConfig c;
  c.lease_namespace = "ns";
  c.lease_name = "lease";
  c.identity = "a";
  c.retry_period = 50ms;
  c.renew_deadline = 400ms;
  c.lease_duration = 600ms;
  return c;
}

// For tests where no renewal is meant to fail: the deadlines leave room for a slow sanitizer
// build on a loaded machine (TSan once took over 400 ms for one renewal here).
runtime::LeaderElectionConfig patientConfig() {
  auto c = config();
  c.renew_deadline = 5s;
  c.lease_duration = 6s;
  return c;
}

std::string holder(FakeKubeClient& client) {
  auto lease = client.get(kube::resources::kLease, "ns", "lease", "");
  return lease.ok() ? sdk::json::stringOr(&*lease, "spec.holderIdentity") : "<none>";
}

bool within(std::chrono::milliseconds bound, const std::function<bool()>& probe) {
  auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    if (probe()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return probe();
}

TEST(LeadershipTest, AStopJoinsTheWorkBeforeTheLeaseIsReleased) {
  FakeKubeClient client;
  StopSignal signals;
  std::atomic<bool> leading{false};
  std::atomic<bool> work_saw_stop{false};
  std::string holder_when_work_returned;
  auto running = std::async(std::launch::async, [&] {
    return runWhileLeading(client, patientConfig(), signals,
                           [&](const std::atomic<bool>& stop) {
                             while (!stop) std::this_thread::sleep_for(5ms);
                             work_saw_stop = true;
                             // A plugin call that ignores cancellation: it returns a while after
                             // the stop. The Lease must still be ours all along (an early release
                             // shows up within the wait).
                             within(500ms, [&] { return holder(client) != "a"; });
                             holder_when_work_returned = holder(client);
                           },
                           {.leading = &leading});
  });
  ASSERT_TRUE(within(5s, [&] { return leading.load(); }));
  signals.requestStop();
  ASSERT_EQ(running.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(running.get(), LeadershipEnd::kStopped);
  EXPECT_TRUE(work_saw_stop);
  EXPECT_EQ(holder_when_work_returned, "a") << "the Lease went while the work was still running";
  EXPECT_EQ(holder(client), "") << "released after the work returned";
  EXPECT_FALSE(leading);
}

TEST(LeadershipTest, ALostLeaseStopsTheWorkAndGivesUpOnWorkThatDoesNotReturn) {
  FakeKubeClient client;
  StopSignal signals;
  std::atomic<bool> release_work{false};
  std::atomic<bool> abandoned{false};
  std::atomic<bool> failing{false};
  client.failNext([&](const std::string&, const std::string&) {
    return failing ? error(Code::kUnavailable, "ConnectionFailed", "apiserver gone") : Status::ok();
  });
  std::atomic<bool> leading{false};
  auto running = std::async(std::launch::async, [&] {
    return runWhileLeading(client, config(), signals,
                           [&](const std::atomic<bool>& stop) {
                             while (!stop) std::this_thread::sleep_for(5ms);
                             while (!release_work)
                               std::this_thread::sleep_for(5ms);  // ignores the stop
                           },
                           {.leading = &leading,
                            .abandon =
                                [&] {
                                  abandoned = true;
                                  release_work = true;
                                },
                            .campaign_again = false,
                            // A plugin call still running: it acts on the backend.
                            .acting_outside_apiserver = [] { return true; }});
  });
  ASSERT_TRUE(within(5s, [&] { return leading.load(); }));
  failing = true;
  ASSERT_EQ(running.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(running.get(), LeadershipEnd::kLost);
  EXPECT_TRUE(abandoned) << "work still running after a lost Lease must end the process";
  EXPECT_FALSE(leading);
}

// An apiserver outage longer than renewDeadline: the work stops and returns, then the same
// process campaigns again and runs the work afresh once the apiserver answers; the two terms
// never overlap, and only a stop signal ends it.
TEST(LeadershipTest, ALostLeaseStopsTheWorkThenTheProcessCampaignsAgain) {
  FakeKubeClient client;
  StopSignal signals;
  std::atomic<bool> failing{false};
  client.failNext([&](const std::string&, const std::string&) {
    return failing ? error(Code::kUnavailable, "ConnectionFailed", "apiserver gone") : Status::ok();
  });
  std::atomic<bool> leading{false};
  std::atomic<int> terms{0};
  std::atomic<int> running_now{0};
  std::atomic<int> most_running{0};
  auto running = std::async(std::launch::async, [&] {
    return runWhileLeading(client, config(), signals,
                           [&](const std::atomic<bool>& stop) {
                             ++terms;
                             int now = ++running_now;
                             most_running = std::max(most_running.load(), now);
                             while (!stop) std::this_thread::sleep_for(5ms);
                             --running_now;
                           },
                           {.leading = &leading});
  });
  ASSERT_TRUE(within(5s, [&] { return leading.load() && terms == 1; }));
  failing = true;
  ASSERT_TRUE(within(5s, [&] { return !leading.load() && running_now == 0; }))
      << "the work must stop once renewals failed for renewDeadline";
  EXPECT_EQ(running.wait_for(300ms), std::future_status::timeout)
      << "a lost Lease alone must not end the process";
  failing = false;
  ASSERT_TRUE(within(5s, [&] { return leading.load() && terms == 2; }))
      << "the process campaigns again and runs the work afresh";
  EXPECT_EQ(holder(client), "a");
  signals.requestStop();
  ASSERT_EQ(running.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(running.get(), LeadershipEnd::kStopped);
  EXPECT_EQ(most_running, 1) << "two terms' work ran at once";
  EXPECT_EQ(holder(client), "") << "released after the work returned";
}

// The chaos run (issue #26): every apiserver pause longer than renewDeadline ended every
// leader, because their work was blocked on requests to the paused apiserver and did not
// return within leaseDuration - renewDeadline; the restarts grew the kubelet's back-off until a
// provider was down for minutes. Work that acts only through the apiserver cannot act beside a
// new leader by waiting (the requests it already sent land or fail either way), so the process
// waits for it and campaigns again; only work still acting outside (a plugin call) or work
// stuck past the hard limit ends it.
TEST(LeadershipTest, WorkBlockedOnlyOnTheApiserverIsWaitedForNotAbandoned) {
  FakeKubeClient client;
  StopSignal signals;
  std::atomic<bool> failing{false};
  std::atomic<bool> release_work{false};
  std::atomic<bool> abandoned{false};
  client.failNext([&](const std::string&, const std::string&) {
    return failing ? error(Code::kUnavailable, "ConnectionFailed", "apiserver gone") : Status::ok();
  });
  std::atomic<bool> leading{false};
  std::atomic<int> terms{0};
  auto running = std::async(std::launch::async, [&] {
    return runWhileLeading(client, config(), signals,
                           [&](const std::atomic<bool>& stop) {
                             ++terms;
                             while (!stop) std::this_thread::sleep_for(5ms);
                             // A request to the paused apiserver, returning only later.
                             while (terms == 1 && !release_work) std::this_thread::sleep_for(5ms);
                           },
                           {.leading = &leading,
                            .abandon = [&] { abandoned = true; },
                            .acting_outside_apiserver = [] { return false; }});
  });
  ASSERT_TRUE(within(5s, [&] { return leading.load() && terms == 1; }));
  failing = true;
  ASSERT_TRUE(within(5s, [&] { return !leading.load(); }));
  // Well past leaseDuration - renewDeadline (200 ms here).
  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(abandoned) << "work blocked on the apiserver alone ended the process";
  failing = false;
  release_work = true;
  ASSERT_TRUE(within(5s, [&] { return leading.load() && terms == 2; }))
      << "once the work returned, the process campaigns again";
  signals.requestStop();
  ASSERT_EQ(running.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(abandoned);
}

}  // namespace
}  // namespace banlieue::roles
