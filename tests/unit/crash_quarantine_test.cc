// The provider's crash quarantine (issue #26) over a real journal directory: a call the
// watchdog found overdue comes back as PluginHung, a crash as PluginCrashed; holds back off
// until K in a row quarantine the object, which only a spec change (generation) or a user's
// clear lifts; a call that returned leaves nothing behind.
#include "host/roles/provider/crash_quarantine.h"
#include "host/plugin/call_tracker.h"
#include "host/plugin/plugin.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace banlieue::roles::provider {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class CrashQuarantineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("banlieue-quarantine-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ASSERT_TRUE(tracker_.setJournal(dir_).isOk());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A call on `uid` that the process does not survive: begun and never ended.
  void dieDuring(const std::string& uid, int64_t generation, bool hang = false) {
    plugin::CallTracker tracker;
    ASSERT_TRUE(tracker.setJournal(dir_).isOk());
    plugin::CallOptions options;
    options.object = "TestMachine ns/" + uid;
    options.object_uid = uid;
    options.object_generation = generation;
    auto started = std::chrono::steady_clock::now();
    tracker.begin("reconcile", options, started + 1s);
    if (hang) {
      auto overdue = tracker.markOverdueAsHung(2s, started + 10s);
      ASSERT_EQ(overdue.size(), 1u);
    }
  }

  fs::path dir_;
  plugin::CallTracker tracker_;
};

TEST_F(CrashQuarantineTest, ACrashIsHeldBackAsPluginCrashedAndAHangAsPluginHung) {
  dieDuring("crashed", 4);
  dieDuring("hung", 7, /*hang=*/true);
  CrashQuarantine quarantine(dir_, 60s);
  auto crashed = quarantine.hold("crashed", 4);
  ASSERT_TRUE(crashed.has_value());
  EXPECT_EQ(crashed->reason, "PluginCrashed");
  EXPECT_NE(crashed->message.find("reconcile of TestMachine ns/crashed"), std::string::npos)
      << crashed->message;
  EXPECT_GT(crashed->retry_after.count(), 0);
  auto hung = quarantine.hold("hung", 7);
  ASSERT_TRUE(hung.has_value());
  EXPECT_EQ(hung->reason, "PluginHung");
  EXPECT_NE(hung->message.find("did not return within its deadline"), std::string::npos)
      << hung->message;
  EXPECT_FALSE(quarantine.hold("innocent", 1).has_value());
}

// A call that only looks (the change feed's long poll, ADR 0057) shares its object uid (the
// Provider's) with introspect: it leaves no journal that would hold the Provider back, or whose
// removal would erase introspect's, and it does not count as a call acting on the backend, which
// would make a process that lost its Lease exit instead of stepping down.
TEST_F(CrashQuarantineTest, AnObservingCallIsNeitherJournaledNorCountedAsActing) {
  plugin::CallOptions acting;
  acting.object = "Provider ns/p";
  acting.object_uid = "provider-uid";
  plugin::CallOptions watching = acting;
  watching.observes_only = true;
  auto now = std::chrono::steady_clock::now();
  auto introspect = tracker_.begin("introspect", acting, now + 30s);
  auto watch = tracker_.begin("watch_changes", watching, now + 60s);
  EXPECT_EQ(tracker_.inFlight(), 1u) << tracker_.describeInFlight();
  tracker_.end(watch);
  EXPECT_TRUE(fs::exists(plugin::CallTracker::journalFile(dir_, "provider-uid")))
      << "the watch's end removed introspect's journal";
  tracker_.end(introspect);
  EXPECT_EQ(tracker_.inFlight(), 0u);
  EXPECT_FALSE(fs::exists(plugin::CallTracker::journalFile(dir_, "provider-uid")));

  tracker_.begin("watch_changes", watching, now + 60s);  // the process dies during it
  CrashQuarantine quarantine(dir_, 60s);
  EXPECT_FALSE(quarantine.hold("provider-uid", 0).has_value());
}

TEST_F(CrashQuarantineTest, KInARowQuarantineUntilTheGenerationMoves) {
  for (int crash = 1; crash <= 3; ++crash) {
    dieDuring("bad", 5);
    CrashQuarantine quarantine(dir_, 1s, 3);
    auto held = quarantine.hold("bad", 5);
    ASSERT_TRUE(held.has_value()) << "crash " << crash;
    if (crash < 3) {
      EXPECT_GT(held->retry_after.count(), 0) << "crash " << crash << ": a back-off, not yet";
      EXPECT_EQ(held->message.find("quarantined"), std::string::npos) << held->message;
    } else {
      EXPECT_EQ(held->retry_after.count(), 0) << "quarantined: no retry of its own";
      EXPECT_NE(held->message.find("quarantined"), std::string::npos) << held->message;
      EXPECT_NE(held->message.find("3 times in a row"), std::string::npos) << held->message;
      EXPECT_TRUE(quarantine.hold("bad", 5).has_value()) << "still the same spec";
      EXPECT_FALSE(quarantine.hold("bad", 6).has_value()) << "a spec change lifts it";
      EXPECT_FALSE(quarantine.hold("bad", 5).has_value()) << "and it stays lifted";
    }
  }
  // Forgiven: the count starts afresh.
  dieDuring("bad", 6);
  CrashQuarantine again(dir_, 1s, 3);
  auto held = again.hold("bad", 6);
  ASSERT_TRUE(held.has_value());
  EXPECT_GT(held->retry_after.count(), 0);
  EXPECT_NE(held->message.find("(1 time)"), std::string::npos) << held->message;
}

TEST_F(CrashQuarantineTest, AClearOrASurvivedCallResetsTheCount) {
  dieDuring("bad", 2);
  {
    CrashQuarantine quarantine(dir_, 1s, 2);
    ASSERT_TRUE(quarantine.hold("bad", 2).has_value());
  }
  dieDuring("bad", 2);
  {
    CrashQuarantine quarantine(dir_, 1s, 2);
    auto held = quarantine.hold("bad", 2);
    ASSERT_TRUE(held.has_value());
    EXPECT_EQ(held->retry_after.count(), 0) << "2 in a row: quarantined";
    quarantine.clear("bad");
    EXPECT_FALSE(quarantine.hold("bad", 2).has_value());
  }
  dieDuring("bad", 2);
  CrashQuarantine quarantine(dir_, 1s, 2);
  auto held = quarantine.hold("bad", 2);
  ASSERT_TRUE(held.has_value());
  EXPECT_GT(held->retry_after.count(), 0) << "cleared: this is crash 1 again";
}

TEST_F(CrashQuarantineTest, ARecordOfAnOlderVersionWithoutGenerationIsRead) {
  std::ofstream(plugin::CallTracker::journalFile(dir_, "old"))
      << "reconcile\nTestMachine ns/old\nold\n";
  CrashQuarantine quarantine(dir_, 60s);
  auto held = quarantine.hold("old", 3);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->reason, "PluginCrashed");
}

TEST_F(CrashQuarantineTest, ACallThatReturnsAfterBeingMarkedHungLeavesNoRecord) {
  plugin::CallOptions options;
  options.object = "TestMachine ns/slow";
  options.object_uid = "slow";
  auto started = std::chrono::steady_clock::now();
  auto id = tracker_.begin("reconcile", options, started + 1s);
  EXPECT_TRUE(tracker_.markOverdueAsHung(2s, started + 2s).empty()) << "within the grace";
  EXPECT_EQ(tracker_.markOverdueAsHung(2s, started + 5s).size(), 1u);
  EXPECT_EQ(tracker_.markOverdueAsHung(2s, started + 6s).size(), 1u) << "still overdue";
  tracker_.end(id);
  EXPECT_TRUE(tracker_.markOverdueAsHung(2s, started + 7s).empty());
  EXPECT_TRUE(fs::is_empty(dir_));
  CrashQuarantine quarantine(dir_, 60s);
  EXPECT_EQ(quarantine.suspects(), 0u);
}

}  // namespace
}  // namespace banlieue::roles::provider
