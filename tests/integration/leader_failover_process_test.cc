// Leader failover between two processes against the real apiserver: a leader killed with
// SIGKILL (no release) is replaced within the lease duration; one stopped with SIGTERM
// releases the Lease and is replaced at once.
#include "tests/support/background_process.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

namespace banlieue::testing {
namespace {

using namespace std::chrono_literals;

// A leader_candidate process (output: "leading" / "stopped leading" lines).
class Candidate {
 public:
  Candidate(const std::string& kubeconfig, const std::string& ns, const std::string& identity)
      : process_({LEADER_CANDIDATE, kubeconfig, ns, "lease", identity}) {}
  std::string output() const { return process_.output(); }
  // A line that is exactly "leading" (log lines go to the same stream).
  bool leading() const { return ("\n" + output()).find("\nleading\n") != std::string::npos; }
  void stop(int signal) { process_.stop(signal); }

 private:
  BackgroundProcess process_;
};

std::string holder(LocalCluster& cluster, const std::string& ns) {
  return cluster.kubectl("get lease lease -n " + ns + " -o jsonpath='{.spec.holderIdentity}'")
      .output;
}

TEST(LeaderFailoverProcessTest, AKilledLeaderIsReplacedWithinTheLeaseDuration) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  Candidate a(cluster.kubeconfig(), ns.name(), "a");
  ASSERT_TRUE(LocalCluster::eventually([&] { return a.leading(); }, 15s)) << a.output();
  Candidate b(cluster.kubeconfig(), ns.name(), "b");
  std::this_thread::sleep_for(2s);
  EXPECT_FALSE(b.leading()) << "one leader at a time";

  auto killed = std::chrono::steady_clock::now();
  a.stop(SIGKILL);
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.leading(); }, 15s)) << b.output();
  auto takeover = std::chrono::steady_clock::now() - killed;
  EXPECT_LT(takeover, 3s + 5s) << "lease duration plus retries";
  EXPECT_EQ(holder(cluster, ns.name()), "b");
}

TEST(LeaderFailoverProcessTest, ACleanStopReleasesTheLeaseAtOnce) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  Candidate a(cluster.kubeconfig(), ns.name(), "a");
  ASSERT_TRUE(LocalCluster::eventually([&] { return a.leading(); }, 15s)) << a.output();
  Candidate b(cluster.kubeconfig(), ns.name(), "b");
  std::this_thread::sleep_for(1s);
  a.stop(SIGTERM);
  EXPECT_THAT(a.output(), ::testing::HasSubstr("leading\nstopped leading\n"));
  auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.leading(); }, 15s)) << b.output();
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, 2s)
      << "a released lease is taken without waiting for it to expire";
}

}  // namespace
}  // namespace banlieue::testing
