// The SDK's side of watch_changes (banlieue/sdk/change_log.h): the rules of the slot that do not
// depend on the backend — the first call answers at once, a later one waits for news or its
// deadline, a cursor it did not hand out (or one too old) is answered with "all", and a reply
// lost on its way to the host loses nothing.
#include <banlieue/sdk/change_log.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace banlieue::sdk {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A call whose deadline is `ms_from_now` milliseconds away (no host table: its wall-clock deadline
// is used).
struct TimedCall {
  explicit TimedCall(int64_t ms_from_now) {
    raw.struct_size = sizeof(raw);
    raw.deadline_unix_ms = std::chrono::duration_cast<milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count() +
                           ms_from_now;
  }
  banlieue_call raw{};
  Call call() const { return Call(&raw); }
};

struct Answer {
  std::string cursor;
  std::vector<std::string> changed;
  bool all = false;
  milliseconds took{0};
};

Answer ask(ChangeLog& log, const std::string& cursor, int64_t deadline_ms,
           const ChangeLog::Poll& poll = {}) {
  TimedCall call(deadline_ms);
  Reply reply;
  WatchRequest request;
  request.cursor = cursor;
  auto started = steady_clock::now();
  EXPECT_TRUE(log.answer(call.call(), request, reply, poll).isOk());
  Answer a;
  a.took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - started);
  a.cursor = json::stringOr(&reply.body(), "cursor");
  for (const auto& id : reply.body()["changed"].GetArray()) a.changed.emplace_back(id.GetString());
  a.all = json::boolean(&reply.body(), "all", false);
  return a;
}

TEST(SdkChangeLogTest, TheFirstCallAnswersAtOnceWithACursorAndNothingChanged) {
  ChangeLog log;
  log.record("file:///a");  // before the feed started: not a change of it
  auto first = ask(log, "", 60'000);
  EXPECT_LT(first.took, milliseconds(500));
  EXPECT_FALSE(first.cursor.empty());
  EXPECT_TRUE(first.changed.empty());
  EXPECT_FALSE(first.all);
}

TEST(SdkChangeLogTest, ALaterCallWaitsForTheNextChangeAndNamesIt) {
  ChangeLog log;
  auto first = ask(log, "", 60'000);
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(300));
    log.record("file:///b");
  });
  auto next = ask(log, first.cursor, 60'000);
  writer.join();
  EXPECT_GE(next.took, milliseconds(250)) << "it answered before anything changed";
  EXPECT_LT(next.took, milliseconds(5'000)) << "it did not answer when something changed";
  EXPECT_THAT(next.changed, ::testing::ElementsAre("file:///b"));
  EXPECT_FALSE(next.all);
  EXPECT_NE(next.cursor, first.cursor);
}

TEST(SdkChangeLogTest, NothingNewIsAnsweredBeforeTheDeadline) {
  ChangeLog log;
  auto first = ask(log, "", 60'000);
  auto quiet = ask(log, first.cursor, 3'000);  // answered 2 s before the deadline
  EXPECT_GE(quiet.took, milliseconds(500));
  EXPECT_LT(quiet.took, milliseconds(2'500));
  EXPECT_TRUE(quiet.changed.empty());
  EXPECT_FALSE(quiet.all);
  EXPECT_EQ(quiet.cursor, first.cursor);
}

TEST(SdkChangeLogTest, EachMachineIsNamedOnceAndALostReplyLosesNothing) {
  ChangeLog log;
  auto first = ask(log, "", 60'000);
  log.record("file:///a");
  log.record("file:///b");
  log.record("file:///a");
  auto answered = ask(log, first.cursor, 60'000);
  EXPECT_THAT(answered.changed, ::testing::ElementsAre("file:///a", "file:///b"));
  // The reply never reached the host, which asks again with its old cursor.
  auto again = ask(log, first.cursor, 60'000);
  EXPECT_EQ(again.changed, answered.changed);
  EXPECT_EQ(again.cursor, answered.cursor);
  log.record("file:///c");
  EXPECT_THAT(ask(log, answered.cursor, 60'000).changed, ::testing::ElementsAre("file:///c"));
}

TEST(SdkChangeLogTest, ACursorItDidNotHandOutIsAnsweredWithAll) {
  ChangeLog log;
  ChangeLog other;  // another instance, or this plugin before a restart
  auto foreign = ask(other, "", 60'000);
  for (const std::string& cursor : {foreign.cursor, std::string("garbage"), std::string("1:2:3")}) {
    auto a = ask(log, cursor, 60'000);
    EXPECT_TRUE(a.all) << cursor;
    EXPECT_LT(a.took, milliseconds(500)) << cursor;
    EXPECT_FALSE(a.cursor.empty());
    EXPECT_FALSE(ask(log, a.cursor, 1'000).all) << "its own cursor is known from then on";
  }
}

TEST(SdkChangeLogTest, ChangesDroppedForRoomOrDeclaredLostAreAnsweredWithAll) {
  ChangeLog log(2);
  auto first = ask(log, "", 60'000);
  log.record("file:///a");
  log.record("file:///b");
  log.record("file:///c");  // drops a
  auto behind = ask(log, first.cursor, 60'000);
  EXPECT_TRUE(behind.all);
  EXPECT_TRUE(behind.changed.empty());
  log.record("file:///d");
  auto caught_up = ask(log, behind.cursor, 60'000);
  EXPECT_FALSE(caught_up.all);
  EXPECT_THAT(caught_up.changed, ::testing::ElementsAre("file:///d"));
  log.recordAll();  // a reconnect: events may have been missed
  EXPECT_TRUE(ask(log, caught_up.cursor, 60'000).all);
}

TEST(SdkChangeLogTest, APollingPluginSpendsTheWaitInItsPollAndAnswersWhatItSaw) {
  ChangeLog log;
  auto first = ask(log, "", 60'000);
  int polls = 0;
  auto answered = ask(log, first.cursor, 60'000, [&](milliseconds budget) {
    EXPECT_GT(budget.count(), 0);
    EXPECT_LE(budget, std::chrono::seconds(30));
    if (++polls == 3) log.record("vsphere://vm-42");
  });
  EXPECT_EQ(polls, 3);
  EXPECT_THAT(answered.changed, ::testing::ElementsAre("vsphere://vm-42"));
}

}  // namespace
}  // namespace banlieue::sdk
