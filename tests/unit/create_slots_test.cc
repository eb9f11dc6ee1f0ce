#include "host/roles/provider/create_slots.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace banlieue::roles::provider {
namespace {

// Records which keys were woken, in order.
struct Wakes {
  std::vector<std::string> keys;
  CreateSlots::Wake of(const std::string& key) {
    return [this, key] { keys.push_back(key); };
  }
};

TEST(CreateSlotsTest, AtMostTheLimitAndTheFirstInLineIsWokenWhenOneEnds) {
  CreateSlots slots;
  Wakes wakes;
  slots.setLimit(2);
  EXPECT_TRUE(slots.acquire("a", wakes.of("a")));
  EXPECT_TRUE(slots.acquire("b", wakes.of("b")));
  EXPECT_TRUE(slots.acquire("a", wakes.of("a"))) << "a key holding a slot keeps it";
  EXPECT_FALSE(slots.acquire("c", wakes.of("c")));
  EXPECT_FALSE(slots.acquire("d", wakes.of("d")));
  EXPECT_EQ(slots.inFlight(), 2);
  EXPECT_EQ(slots.waiting(), 2);
  EXPECT_TRUE(wakes.keys.empty());

  slots.release("a");
  EXPECT_EQ(wakes.keys, std::vector<std::string>{"c"});
  EXPECT_FALSE(slots.acquire("e", wakes.of("e"))) << "a newcomer does not take c's slot";
  EXPECT_FALSE(slots.acquire("d", wakes.of("d"))) << "nor does the second in line";
  EXPECT_TRUE(slots.acquire("c", wakes.of("c")));
  EXPECT_EQ(slots.inFlight(), 2);
  EXPECT_EQ(slots.waiting(), 2);  // d, e
}

TEST(CreateSlotsTest, CreatesFoundRunningCountWhateverTheLimit) {
  CreateSlots slots;
  Wakes wakes;
  slots.setLimit(1);
  slots.hold("running-1");  // after a restart: both were running at the backend
  slots.hold("running-2");
  EXPECT_EQ(slots.inFlight(), 2);
  EXPECT_FALSE(slots.acquire("new", wakes.of("new")));
  slots.release("running-1");
  EXPECT_TRUE(wakes.keys.empty()) << "one running create still fills the one slot";
  slots.release("running-2");
  EXPECT_EQ(wakes.keys, std::vector<std::string>{"new"});
  EXPECT_TRUE(slots.acquire("new", wakes.of("new")));
}

TEST(CreateSlotsTest, ARaisedLimitWakesAsManyAsItFrees) {
  CreateSlots slots;
  Wakes wakes;
  slots.setLimit(1);
  EXPECT_TRUE(slots.acquire("a", wakes.of("a")));
  for (const char* key : {"b", "c", "d"}) EXPECT_FALSE(slots.acquire(key, wakes.of(key)));
  slots.setLimit(3);
  EXPECT_EQ(wakes.keys, (std::vector<std::string>{"b", "c"}));
  slots.setLimit(0);  // no limit: everyone in line may go
  EXPECT_EQ(wakes.keys, (std::vector<std::string>{"b", "c", "d"}));
  for (const char* key : {"d", "c", "b"}) EXPECT_TRUE(slots.acquire(key, wakes.of(key)));
  EXPECT_EQ(slots.waiting(), 0);
}

TEST(CreateSlotsTest, AKeyThatStopsWaitingLeavesTheLine) {
  CreateSlots slots;
  Wakes wakes;
  slots.setLimit(1);
  EXPECT_TRUE(slots.acquire("a", wakes.of("a")));
  EXPECT_FALSE(slots.acquire("deleted", wakes.of("deleted")));
  EXPECT_FALSE(slots.acquire("b", wakes.of("b")));
  slots.release("deleted");  // its object went while it waited
  EXPECT_EQ(slots.waiting(), 1);
  slots.release("a");
  EXPECT_EQ(wakes.keys, std::vector<std::string>{"b"});
}

TEST(CreateSlotsTest, AWokenKeyThatFoundNoSlotIsWokenAgain) {
  CreateSlots slots;
  Wakes wakes;
  slots.setLimit(1);
  EXPECT_TRUE(slots.acquire("a", wakes.of("a")));
  EXPECT_FALSE(slots.acquire("b", wakes.of("b")));
  slots.release("a");
  slots.hold("a");  // the same object found running again before b came
  EXPECT_FALSE(slots.acquire("b", wakes.of("b")));
  slots.release("a");
  EXPECT_EQ(wakes.keys, (std::vector<std::string>{"b", "b"}));
}

TEST(CreateSlotsTest, ManyThreadsNeverExceedTheLimit) {
  CreateSlots slots;
  slots.setLimit(3);
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        std::string key = std::to_string(t) + "/" + std::to_string(i);
        while (!slots.acquire(key, nullptr)) std::this_thread::yield();
        int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --running;
        slots.release(key);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(slots.inFlight(), 0);
  EXPECT_EQ(slots.waiting(), 0);
}

}  // namespace
}  // namespace banlieue::roles::provider
