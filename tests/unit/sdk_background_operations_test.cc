// The SDK's registry of long plugin operations: tokens are unique and findable until the
// result is reported, and destroying the registry stops and joins every running job.
#include <banlieue/sdk/background_operations.h>

#include <gtest/gtest.h>

#include <chrono>
#include <set>

namespace banlieue::sdk {
namespace {

struct Job {
  std::atomic<bool> stop{false};
  std::atomic<bool> cleaned_up{false};
  std::thread thread;
};

// Runs until asked to stop, then records that it cleaned up.
void startUntilStopped(const std::shared_ptr<Job>& job) {
  job->thread = std::thread([raw = job.get()] {
    while (!raw->stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    raw->cleaned_up = true;
  });
}

TEST(SdkBackgroundOperationsTest, TokensAreUniqueAndFoundUntilFinished) {
  BackgroundOperations<Job> ops;
  std::set<std::string> tokens;
  std::vector<std::shared_ptr<Job>> jobs;
  for (int i = 0; i < 50; ++i) {
    auto job = std::make_shared<Job>();
    std::string token = ops.add(job, "import");
    EXPECT_EQ(token.rfind("import:", 0), 0u) << token;
    tokens.insert(token);
    jobs.push_back(job);
  }
  EXPECT_EQ(tokens.size(), 50u);
  EXPECT_EQ(ops.size(), 50u);
  const std::string first = *tokens.begin();
  auto found = ops.find(first);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(ops.find("import:0:0"), nullptr);  // a token from before a restart
  found->thread = std::thread([] {});
  ops.finish(first, *found);
  EXPECT_FALSE(found->thread.joinable());
  EXPECT_EQ(ops.find(first), nullptr);
  EXPECT_EQ(ops.size(), 49u);
}

TEST(SdkBackgroundOperationsTest, DestroyingTheRegistryStopsAndJoinsRunningJobs) {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    BackgroundOperations<Job> ops;
    for (int i = 0; i < 3; ++i) {
      auto job = std::make_shared<Job>();
      ops.add(job, "copy");
      startUntilStopped(job);
      jobs.push_back(job);
    }
  }  // would hang here if a job were not told to stop
  for (const auto& job : jobs) {
    EXPECT_TRUE(job->stop);
    EXPECT_TRUE(job->cleaned_up);
    EXPECT_FALSE(job->thread.joinable());
  }
}

}  // namespace
}  // namespace banlieue::sdk
