#include "host/runtime/events.h"

#include "host/common/metrics.h"
#include "host/runtime/clock.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;
using testing::FakeKubeClient;

rapidjson::Document vm() {
  return json::parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VirtualMachine",
      "metadata":{"name":"web-1","namespace":"team-a","uid":"u-9","resourceVersion":"42"}})",
                     "vm");
}

rapidjson::Document events(FakeKubeClient& client, const std::string& ns) {
  auto list = client.list(kube::resources::kEvent, ns, {});
  EXPECT_TRUE(list.ok());
  return std::move(list).value();
}

TEST(EventRecorderTest, WritesAnEventsK8sIoV1Event) {
  FakeKubeClient client;
  FakeClock clock;
  EventRecorder recorder(client, {"banlieue.io/controller", "controller-0"}, clock);
  auto object = vm();
  recorder.warning(object, "NoProvider", "Schedule", "no Provider matches the selector");
  recorder.flush();
  auto list = events(client, "team-a");
  ASSERT_EQ(list["items"].Size(), 1u);
  const auto& e = list["items"][0];
  EXPECT_EQ(json::stringOr(&e, "type"), "Warning");
  EXPECT_EQ(json::stringOr(&e, "reason"), "NoProvider");
  EXPECT_EQ(json::stringOr(&e, "action"), "Schedule");
  EXPECT_EQ(json::stringOr(&e, "note"), "no Provider matches the selector");
  EXPECT_EQ(json::stringOr(&e, "reportingController"), "banlieue.io/controller");
  EXPECT_EQ(json::stringOr(&e, "reportingInstance"), "controller-0");
  EXPECT_EQ(json::stringOr(&e, "regarding.uid"), "u-9");
  EXPECT_EQ(json::stringOr(&e, "regarding.kind"), "VirtualMachine");
  EXPECT_THAT(json::stringOr(&e, "metadata.name"), ::testing::StartsWith("web-1."));
  // MicroTime: 2026-11-29T10:00:00.123456Z
  EXPECT_THAT(json::stringOr(&e, "eventTime"),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}Z"));
}

TEST(EventRecorderTest, RepeatsBecomeASeriesNotNewObjects) {
  FakeKubeClient client;
  FakeClock clock;
  EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
  auto object = vm();
  recorder.normal(object, "Scheduled", "Schedule", "placed on lab/zone-a");
  recorder.flush();
  clock.advance(std::chrono::seconds(31));
  recorder.normal(object, "Scheduled", "Schedule", "placed on lab/zone-a");
  recorder.flush();
  clock.advance(std::chrono::seconds(5));
  recorder.normal(object, "Scheduled", "Schedule", "placed on lab/zone-a");  // inside 30 s
  recorder.flush();
  clock.advance(std::chrono::seconds(31));
  recorder.normal(object, "Scheduled", "Schedule", "placed on lab/zone-a");
  recorder.flush();
  auto list = events(client, "team-a");
  ASSERT_EQ(list["items"].Size(), 1u);
  EXPECT_EQ(json::integer(&list["items"][0], "series.count"), 4);

  recorder.normal(object, "Scheduled", "Schedule", "placed on lab/zone-b");  // another note
  recorder.flush();
  EXPECT_EQ(events(client, "team-a")["items"].Size(), 2u);
}

// Holds each event POST until `wanted` are in flight at once (or `patience` has passed) and
// records the most seen in flight: proof of writers side by side, without timing anything.
struct ConcurrentPosts {
  explicit ConcurrentPosts(int wanted, std::chrono::milliseconds patience)
      : wanted(wanted), patience(patience) {}
  Status operator()(const std::string& verb, const std::string& plural) {
    if (verb != "create" || plural != "events") return Status();
    std::unique_lock lock(mutex);
    ++in_flight;
    most = std::max(most, in_flight);
    cv.notify_all();
    cv.wait_for(lock, patience, [this] { return in_flight >= wanted; });
    --in_flight;
    return Status();
  }
  const int wanted;
  const std::chrono::milliseconds patience;
  std::mutex mutex;
  std::condition_variable cv;
  int in_flight = 0;
  int most = 0;
};

rapidjson::Document vmNamed(const std::string& name) {
  return json::parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VirtualMachine",
      "metadata":{"name":")" +
                         name + R"(","namespace":"team-a","uid":"uid-)" + name + R"("}})",
                     "vm");
}

// A series remembers its event by the name's random part only (issue #23: a long-running
// controller keeps one series per VM for ten minutes); an object whose name fills the event
// name's 253 characters still finds its event again.
TEST(EventRecorderTest, ARepeatFindsItsEventWhateverTheObjectsNameLength) {
  FakeKubeClient client;
  FakeClock clock;
  EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
  for (const std::string& name : {std::string("short"), std::string(253, 'v')}) {
    auto object = vmNamed(name);
    recorder.normal(object, "Ready", "Reconcile", "the machine is ready");
    recorder.flush();
    clock.advance(std::chrono::seconds(31));
    recorder.normal(object, "Ready", "Reconcile", "the machine is ready");
    recorder.flush();
  }
  auto list = events(client, "team-a");
  ASSERT_EQ(list["items"].Size(), 2u);
  for (const auto& e : list["items"].GetArray()) {
    EXPECT_LE(json::stringOr(&e, "metadata.name").size(), 253u);
    EXPECT_EQ(json::integer(&e, "series.count"), 2) << json::stringOr(&e, "metadata.name");
  }
}

// 16 reconcile workers make events faster than one POST at a time writes them (issue #23:
// half of 1,000 VMs' Ready Events trailed convergence): writers post side by side.
TEST(EventRecorderTest, EventsOfDifferentObjectsAreWrittenSideBySide) {
  FakeKubeClient client;
  FakeClock clock;
  auto posts = std::make_shared<ConcurrentPosts>(4, std::chrono::seconds(5));
  client.failNext([posts](const std::string& verb, const std::string& plural) {
    return (*posts)(verb, plural);
  });
  EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
  for (const char* name : {"a", "b", "c", "d"}) {
    recorder.normal(vmNamed(name), "Ready", "Reconcile", "the machine is ready");
  }
  recorder.flush();
  EXPECT_EQ(posts->most, 4);
  EXPECT_EQ(events(client, "team-a")["items"].Size(), 4u);
}

// One object's events stay in order, one at a time: a repeat finds its series.
TEST(EventRecorderTest, OneObjectsEventsAreWrittenOneAtATimeInOrder) {
  FakeKubeClient client;
  FakeClock clock;
  auto posts = std::make_shared<ConcurrentPosts>(2, std::chrono::milliseconds(200));
  client.failNext([posts](const std::string& verb, const std::string& plural) {
    return (*posts)(verb, plural);
  });
  EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
  auto object = vm();
  recorder.normal(object, "Scheduled", "Schedule", "placed on lab/zone-a");
  recorder.normal(object, "Scheduled", "Schedule", "placed on lab/zone-a");
  recorder.normal(object, "Ready", "Reconcile", "the machine is ready");
  recorder.flush();
  EXPECT_EQ(posts->most, 1);
  auto list = events(client, "team-a");
  ASSERT_EQ(list["items"].Size(), 2u) << "the repeat joined the first one's series";
  std::set<std::string> reasons;
  for (const auto& e : list["items"].GetArray()) reasons.insert(json::stringOr(&e, "reason"));
  EXPECT_EQ(reasons, (std::set<std::string>{"Scheduled", "Ready"}));
}

TEST(EventRecorderTest, AHotLoopIsRateLimitedPerObject) {
  FakeKubeClient client;
  FakeClock clock;
  EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
  auto object = vm();
  for (int i = 0; i < 40; ++i) {
    recorder.warning(object, "Failed", "Reconcile", "attempt " + std::to_string(i));
  }
  recorder.flush();
  EXPECT_EQ(events(client, "team-a")["items"].Size(), 25u) << "burst of 25 per object";
  clock.advance(std::chrono::minutes(5));
  recorder.warning(object, "Failed", "Reconcile", "after refill");
  recorder.flush();
  EXPECT_EQ(events(client, "team-a")["items"].Size(), 26u);
}

// The per-object buckets do not outlive their purpose: once refilled they are forgotten, so a
// role that has reported on many objects keeps entries only for recent ones.
TEST(EventRecorderTest, RefilledBucketsAreForgotten) {
  FakeKubeClient client;
  FakeClock clock;
  EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
  auto eventFor = [&](int i) {
    auto object = vm();
    object["metadata"]["uid"].SetString(("uid-" + std::to_string(i)).c_str(),
                                        object.GetAllocator());
    recorder.normal(object, "Created", "Create", "created");
    if (i % 500 == 499) recorder.flush();  // within the queue's capacity
  };
  for (int i = 0; i < 1500; ++i) eventFor(i);
  recorder.flush();
  EXPECT_EQ(recorder.trackedObjects(), 1500u);
  // 25 tokens at one per 5 minutes: every one of those buckets is full again after ~2 hours.
  clock.advance(std::chrono::hours(3));
  for (int i = 1500; i < 2100; ++i) eventFor(i);
  recorder.flush();
  EXPECT_LT(recorder.trackedObjects(), 1500u) << "the refilled buckets were kept";
  EXPECT_GE(recorder.trackedObjects(), 2100u - 2048u) << "recent objects must stay tracked";
}

TEST(EventRecorderTest, ApiFailuresAreSwallowedAndCounted) {
  FakeKubeClient client;
  client.failNext([](const std::string&, const std::string&) {
    return Status(Code::kUnavailable, "ServiceUnavailable", "apiserver down");
  });
  FakeClock clock;
  auto& dropped = MetricsRegistry::global().counter(
      "banlieue_events_dropped_total", "Events not written, by cause", {{"cause", "api_error"}});
  double before = dropped.value();
  {
    EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
    auto object = vm();
    recorder.normal(object, "Scheduled", "Schedule", "x");  // must not throw
    recorder.flush();
  }
  EXPECT_EQ(dropped.value(), before + 1);
}

TEST(EventRecorderTest, ClusterScopedObjectsReportIntoKubeSystem) {
  FakeKubeClient client;
  FakeClock clock;
  EventRecorder recorder(client, {"banlieue.io/controller", "c"}, clock);
  auto pc = json::parse(R"({"apiVersion":"banlieue.io/v1alpha1","kind":"ProviderClass",
      "metadata":{"name":"libvirt","uid":"u-1"}})",
                        "pc");
  recorder.normal(pc, "Ready", "Validate", "plugin found");
  recorder.flush();
  EXPECT_EQ(events(client, "kube-system")["items"].Size(), 1u)
      << "the namespace every apiserver accepts for a cluster-scoped object's events";
}

}  // namespace
}  // namespace banlieue::runtime
