#include "host/runtime/work_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

namespace banlieue::runtime {
namespace {

using namespace std::chrono_literals;

TEST(WorkQueueTest, AKeyIsQueuedOnceHoweverOftenItIsAdded) {
  WorkQueue q;
  q.add("ns/a");
  q.add("ns/a");
  q.add("ns/b");
  EXPECT_EQ(q.stats().depth, 2u);
  EXPECT_EQ(q.get(), "ns/a");
  EXPECT_EQ(q.get(), "ns/b");
  EXPECT_EQ(q.stats().depth, 0u);
}

TEST(WorkQueueTest, AKeyAddedWhileProcessingWaitsForDone) {
  WorkQueue q;
  q.add("ns/a");
  auto key = q.get();
  ASSERT_EQ(key, "ns/a");
  q.add("ns/a");
  EXPECT_EQ(q.stats().depth, 0u) << "must not be handed to a second worker";
  EXPECT_EQ(q.stats().processing, 1u);
  q.done("ns/a");
  EXPECT_EQ(q.stats().depth, 1u);
  EXPECT_EQ(q.get(), "ns/a");
  q.done("ns/a");
  EXPECT_EQ(q.stats().depth, 0u) << "done without a re-add queues nothing";
}

TEST(WorkQueueTest, NeverTwoWorkersOnOneKey) {
  WorkQueue q;
  std::mutex mutex;
  std::set<std::string> in_flight;
  std::atomic<int> processed{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.get()) {
        {
          std::lock_guard lock(mutex);
          if (!in_flight.insert(*key).second) overlap = true;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mutex);
          in_flight.erase(*key);
        }
        ++processed;
        q.done(*key);
      }
    });
  }
  for (int round = 0; round < 2000; ++round) q.add("ns/k" + std::to_string(round % 7));
  while (q.stats().depth > 0 || q.stats().processing > 0) std::this_thread::yield();
  q.shutDown();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(overlap);
  EXPECT_GE(processed.load(), 7);
}

TEST(WorkQueueTest, AddAfterWaitsOnTheQueuesClock) {
  FakeClock clock;
  WorkQueue q(clock);
  q.addAfter("ns/later", 10s);
  EXPECT_EQ(q.stats().waiting, 1u);
  auto getter = std::async(std::launch::async, [&] { return q.get(); });
  clock.advance(5s);
  // Still delayed (a positive check of the queue's state, not a wait for nothing to happen).
  EXPECT_EQ(q.stats().waiting, 1u) << "due in 5 more seconds";
  EXPECT_EQ(q.stats().depth, 0u);
  clock.advance(5s);
  ASSERT_EQ(getter.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(getter.get(), "ns/later");
}

TEST(WorkQueueTest, TheEarliestDueTimeOfAKeyWins) {
  FakeClock clock;
  WorkQueue q(clock);
  q.addAfter("ns/a", 10s);
  q.addAfter("ns/a", 1s);
  q.addAfter("ns/a", 20s);
  EXPECT_EQ(q.stats().waiting, 1u);
  clock.advance(1s);
  EXPECT_EQ(q.get(), "ns/a");
}

TEST(WorkQueueTest, ShutDownWakesWaitingWorkers) {
  WorkQueue q;
  auto getter = std::async(std::launch::async, [&] { return q.get(); });
  q.shutDown();
  ASSERT_EQ(getter.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(getter.get().has_value());
  q.add("ns/a");
  EXPECT_EQ(q.stats().depth, 0u) << "nothing is queued after shutdown";
}

TEST(RateLimiterTest, PerItemBackoffDoublesFromFiveMillisecondsAndResetsOnForget) {
  ItemExponentialBackoff backoff;
  EXPECT_EQ(backoff.when("a"), 5ms);
  EXPECT_EQ(backoff.when("a"), 10ms);
  EXPECT_EQ(backoff.when("a"), 20ms);
  EXPECT_EQ(backoff.when("b"), 5ms) << "keys back off independently";
  for (int i = 0; i < 40; ++i) backoff.when("a");
  EXPECT_EQ(backoff.when("a"), 1000s) << "capped";
  backoff.forget("a");
  EXPECT_EQ(backoff.when("a"), 5ms);
}

TEST(RateLimiterTest, TheBucketAllowsABurstOfOneHundredThenTenPerSecond) {
  FakeClock clock;
  TokenBucket bucket(clock);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(bucket.reserve(), 0ns) << i;
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve()), 100ms);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.reserve()), 200ms);
  clock.advance(1s);
  EXPECT_EQ(bucket.reserve(), 0ns) << "refilled at ten per second";
}

TEST(RateLimiterTest, RateLimitedAddsCountRetriesAndBackOff) {
  FakeClock clock;
  WorkQueue q(clock);
  q.addRateLimited("ns/failing");
  q.addRateLimited("ns/failing");
  EXPECT_EQ(q.retries("ns/failing"), 2);
  EXPECT_EQ(q.stats().retries, 2u);
  EXPECT_EQ(q.stats().waiting, 1u) << "the earliest delay (5 ms) is kept";
  clock.advance(5ms);
  EXPECT_EQ(q.get(), "ns/failing");
  q.forget("ns/failing");
  EXPECT_EQ(q.retries("ns/failing"), 0);
}

}  // namespace
}  // namespace banlieue::runtime
