// Leader failover between two processes against the real apiserver: a leader killed with
// SIGKILL (no release) is replaced once its lease expired; one stopped with SIGTERM releases
// the Lease and is replaced without waiting for it to expire. Bounds come from the timings the
// candidates run with, and "one leader at a time" is checked once the second candidate has
// seen the first one's Lease, not after a sleep.
#include "tests/support/background_process.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

namespace banlieue::testing {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

struct Timings {
  milliseconds lease_duration;
  milliseconds renew_deadline;
  milliseconds retry_period;
};

// Short timings, so that a crashed leader's lease expires quickly.
constexpr Timings kShort{3s, 2s, 500ms};
// A lease far longer than the test waits: a candidate can only take it because it was
// released, never because it expired.
constexpr Timings kLong{120s, 80s, 500ms};

// A leader_candidate process (output: "leading" / "stopped leading" / "leader: <id>" lines).
class Candidate {
 public:
  Candidate(const std::string& kubeconfig, const std::string& ns, const std::string& identity,
            const Timings& t)
      : process_({LEADER_CANDIDATE, kubeconfig, ns, "lease", identity,
                  std::to_string(t.lease_duration.count()),
                  std::to_string(t.renew_deadline.count()),
                  std::to_string(t.retry_period.count())}) {}
  std::string output() const { return process_.output(); }
  // A line that is exactly `line` (log lines go to the same stream).
  bool printed(const std::string& line) const {
    return ("\n" + output()).find("\n" + line + "\n") != std::string::npos;
  }
  bool leading() const { return printed("leading"); }
  void stop(int signal) { process_.stop(signal); }

 private:
  BackgroundProcess process_;
};

std::string holder(LocalCluster& cluster, const std::string& ns) {
  return cluster.kubectl("get lease lease -n " + ns + " -o jsonpath='{.spec.holderIdentity}'")
      .output;
}

TEST(LeaderFailoverProcessTest, AKilledLeaderIsReplacedOnceItsLeaseExpired) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  Candidate a(cluster.kubeconfig(), ns.name(), "a", kShort);
  ASSERT_TRUE(LocalCluster::eventually([&] { return a.leading(); }, 30s)) << a.output();
  Candidate b(cluster.kubeconfig(), ns.name(), "b", kShort);
  // b read a's live Lease and did not take it.
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.printed("leader: a"); }, 30s)) << b.output();
  EXPECT_FALSE(b.leading()) << "one leader at a time";

  // At most a lease duration after a's last renewal, plus one campaign retry (20% jitter) to
  // notice, plus the renew deadline as the allowance for slow requests.
  const auto bound = kShort.lease_duration + kShort.retry_period * 6 / 5 + kShort.renew_deadline;
  auto killed = std::chrono::steady_clock::now();
  a.stop(SIGKILL);
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.leading(); }, bound + 30s)) << b.output();
  auto takeover = std::chrono::steady_clock::now() - killed;
  EXPECT_LT(takeover, bound) << "lease duration plus a retry";
  EXPECT_EQ(holder(cluster, ns.name()), "b");
}

TEST(LeaderFailoverProcessTest, ACleanStopReleasesTheLeaseForTheNextCandidate) {
  auto& cluster = LocalCluster::shared();
  LocalCluster::TestNamespace ns(cluster);
  Candidate a(cluster.kubeconfig(), ns.name(), "a", kLong);
  ASSERT_TRUE(LocalCluster::eventually([&] { return a.leading(); }, 30s)) << a.output();
  Candidate b(cluster.kubeconfig(), ns.name(), "b", kLong);
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.printed("leader: a"); }, 30s)) << b.output();
  EXPECT_FALSE(b.leading()) << "one leader at a time";
  a.stop(SIGTERM);
  EXPECT_THAT(a.output(), ::testing::HasSubstr("leading\nstopped leading\n"));
  // Well before a's lease could expire (kLong), so only the release lets b in.
  ASSERT_TRUE(LocalCluster::eventually([&] { return b.leading(); }, kLong.lease_duration / 4))
      << b.output();
  EXPECT_EQ(holder(cluster, ns.name()), "b");
}

}  // namespace
}  // namespace banlieue::testing
