// Leader failover between two processes against the real apiserver: a leader killed with
// SIGKILL (no release) is replaced within the lease duration; one stopped with SIGTERM
// releases the Lease and is replaced at once.
#include "tests/support/local_cluster.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

extern char** environ;

namespace banlieue::testing {
namespace {

using namespace std::chrono_literals;

class Candidate {
 public:
  Candidate(const std::string& kubeconfig, const std::string& ns, const std::string& identity)
      : output_(std::filesystem::temp_directory_path() /
                ("leader-" + ns + "-" + identity + ".out")) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, output_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<std::string> args{LEADER_CANDIDATE, kubeconfig, ns, "lease", identity};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn(&pid_, LEADER_CANDIDATE, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Candidate() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove(output_);
  }
  std::string output() const {
    std::ifstream in(output_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // A line that is exactly "leading" (log lines go to the same stream).
  bool leading() const { return ("\n" + output()).find("\nleading\n") != std::string::npos; }
  void stop(int signal) {
    kill(pid_, signal);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::filesystem::path output_;
  pid_t pid_ = -1;
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
