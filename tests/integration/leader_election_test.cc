// Leader failover against the real apiserver: two candidates with their own connections,
// short timings; when the leader dies without releasing, the other takes over once the lease
// expired; with a clean stop, the Lease is released. Bounds come from the configured timings,
// and "b did not take over while a led" is checked after b's own attempts, not after a sleep.
#include "host/runtime/leader_election.h"
#include "host/kube/client.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

namespace banlieue::runtime {
namespace {

using namespace std::chrono_literals;
using testing::LocalCluster;

LeaderElectionConfig fast(const std::string& ns, const std::string& identity) {
  LeaderElectionConfig c;
  c.lease_namespace = ns;
  c.lease_name = "failover";
  c.identity = identity;
  c.lease_duration = 3s;
  c.renew_deadline = 2s;
  c.retry_period = 500ms;
  return c;
}

TEST(LeaderElectionIntegrationTest, AnotherCandidateTakesOverWithinTheLeaseDuration) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  auto client_a = cluster.client();
  auto client_b = cluster.client();
  auto config_a = fast(ns.name(), "a");
  config_a.release_on_cancel = false;  // as if the process died
  LeaderElector a(*client_a, config_a);
  LeaderElector b(*client_b, fast(ns.name(), "b"));

  std::atomic<bool> stop_a{false}, stop_b{false};
  auto run_a = std::async(std::launch::async, [&] { a.run(stop_a); });
  ASSERT_TRUE(LocalCluster::eventually([&] { return a.isLeader(); }, 10s));
  auto run_b = std::async(std::launch::async, [&] { b.run(stop_b); });
  // b campaigns against the live leader for several retries.
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.attempts() >= 3; }, 30s));
  EXPECT_FALSE(b.isLeader());
  EXPECT_EQ(b.observedHolder(), "a");

  // b takes over when, on its own clock, a's last record is a lease duration old: at most a
  // lease duration after a's last renewal, plus one campaign retry (with its 20% jitter) to
  // notice, plus the renew deadline as the allowance for slow requests.
  const auto& c = config_a;
  const auto bound = c.lease_duration + c.retry_period * 6 / 5 + c.renew_deadline;
  auto died = std::chrono::steady_clock::now();
  stop_a = true;
  run_a.wait();
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.isLeader(); }, bound + 30s));
  auto takeover = std::chrono::steady_clock::now() - died;
  EXPECT_LT(takeover, bound) << "within the lease duration plus a retry";
  auto lease = cluster.kubectl("get lease failover -n " + ns.name() +
                               " -o jsonpath='{.spec.holderIdentity} {.spec.leaseTransitions}'");
  EXPECT_EQ(lease.output, "b 1");
  stop_b = true;
  run_b.wait();
  auto released = cluster.kubectl("get lease failover -n " + ns.name() +
                                  " -o jsonpath='{.spec.holderIdentity}'");
  EXPECT_EQ(released.output, "") << "a clean stop releases the lease";
}

}  // namespace
}  // namespace banlieue::runtime
