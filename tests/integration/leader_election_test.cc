// Leader failover against the real apiserver: two candidates with their own connections,
// short timings; when the leader dies without releasing, the other takes over after the
// lease duration; with a clean stop, at once.
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
  std::this_thread::sleep_for(1500ms);  // b campaigns against a live leader for several retries
  EXPECT_FALSE(b.isLeader());

  auto died = std::chrono::steady_clock::now();
  stop_a = true;
  run_a.wait();
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.isLeader(); }, 15s));
  auto takeover = std::chrono::steady_clock::now() - died;
  EXPECT_LT(takeover, 3s + 2s) << "within lease duration plus a retry or two";
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
