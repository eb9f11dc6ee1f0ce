#include "host/runtime/controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

namespace banlieue::runtime {
namespace {

using namespace std::chrono_literals;

class ScriptedReconciler final : public Reconciler {
 public:
  std::function<Result(const Request&, int call)> script;
  Result reconcile(const Request& request) override {
    int call;
    {
      std::lock_guard lock(mutex_);
      call = ++calls_[request.key()];
    }
    return script(request, call);
  }
  int calls(const std::string& key) {
    std::lock_guard lock(mutex_);
    return calls_[key];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> calls_;
};

// Runs the controller on a thread; the destructor stops it.
struct Running {
  Controller& controller;
  std::atomic<bool> stop{false};
  std::future<void> done;
  explicit Running(Controller& c) : controller(c) {
    done = std::async(std::launch::async, [this] { controller.run(stop); });
  }
  ~Running() {
    stop = true;
    done.wait();
  }
};

// Waits for a positive signal; the wall-clock bound only ends a failing test, so it is generous:
// the unit tier runs beside the fuzz replays on 2 cores, where 2 s was seen to run out
// (ControllerTest.RequeueAfterBringsTheKeyBackAfterTheDelay, 2026-12-02).
bool eventually(FakeClock* clock, const std::function<bool()>& probe) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    if (clock) clock->advance(5ms);
    std::this_thread::sleep_for(2ms);
  }
  return probe();
}

// Proof that a single worker has drained everything that was due on the clock as it stands:
// each get() first promotes the delayed keys that are due and queues them behind the ready
// ones, so once a first marker has been reconciled, anything due then is queued ahead of a
// second marker, and has been reconciled by the time the second marker is.
void drainWithMarkers(Controller& c, ScriptedReconciler& r, const std::string& tag) {
  for (const std::string& marker : {"marker/" + tag + "-1", "marker/" + tag + "-2"}) {
    c.enqueue(marker);
    ASSERT_TRUE(eventually(nullptr, [&] { return r.calls(marker) == 1; })) << marker;
  }
}

TEST(ControllerTest, RequestsSplitKeysIntoNamespaceAndName) {
  EXPECT_EQ(Request::fromKey("team-a/web").ns, "team-a");
  EXPECT_EQ(Request::fromKey("team-a/web").name, "web");
  EXPECT_EQ(Request::fromKey("gold").ns, "");
  EXPECT_EQ(Request::fromKey("gold").key(), "gold");
}

TEST(ControllerTest, RetryableErrorsBackOffUntilSuccess) {
  FakeClock clock;
  ScriptedReconciler r;
  r.script = [](const Request&, int call) {
    return call < 3 ? Result::retry(error(Code::kUnavailable, "BackendBusy", "try later"))
                    : Result::done();
  };
  Controller c("test", r, {}, clock);
  Running running(c);
  c.enqueue("ns/a");
  ASSERT_TRUE(eventually(&clock, [&] { return r.calls("ns/a") == 3; }));
  EXPECT_EQ(c.stats().errors, 2u);
  EXPECT_EQ(c.queue().stats().retries, 2u);
}

TEST(ControllerTest, RequeueAfterBringsTheKeyBackAfterTheDelay) {
  FakeClock clock;
  ScriptedReconciler r;
  r.script = [](const Request& request, int call) {
    return request.ns == "ns" && call == 1 ? Result::requeueAfter(30s) : Result::done();
  };
  Controller c("test", r, ControllerOptions{.workers = 1}, clock);
  Running running(c);
  c.enqueue("ns/a");
  ASSERT_TRUE(eventually(nullptr, [&] { return r.calls("ns/a") == 1; }));
  // The one worker has finished that reconcile, requeue included, once it serves the markers:
  // the delay counts from now (TSan's slow threads showed the requeue landing after 29 s).
  drainWithMarkers(c, r, "0s");
  clock.advance(29s);
  drainWithMarkers(c, r, "29s");
  EXPECT_EQ(r.calls("ns/a"), 1) << "not before its time";
  clock.advance(1s);
  EXPECT_TRUE(eventually(nullptr, [&] { return r.calls("ns/a") == 2; }));
}

TEST(ControllerTest, TerminalErrorsAreNotRetried) {
  FakeClock clock;
  ScriptedReconciler r;
  r.script = [](const Request&, int) {
    return Result::terminal(
        error(Code::kInvalidArgument, "InvalidSpec", "spec.cpus must be positive"));
  };
  Controller c("test", r, ControllerOptions{.workers = 1}, clock);
  Running running(c);
  c.enqueue("ns/a");
  ASSERT_TRUE(eventually(nullptr, [&] { return c.stats().terminal_errors == 1; }));
  clock.advance(2000s);
  drainWithMarkers(c, r, "2000s");
  EXPECT_EQ(r.calls("ns/a"), 1);
  EXPECT_EQ(c.queue().stats().waiting, 0u) << "nothing scheduled for later either";
}

TEST(ControllerTest, AThrowingReconcilerIsRetriedNotFatal) {
  FakeClock clock;
  ScriptedReconciler r;
  r.script = [](const Request&, int call) -> Result {
    if (call == 1) throw std::runtime_error("bug");
    return Result::done();
  };
  Controller c("test", r, {}, clock);
  Running running(c);
  c.enqueue("ns/a");
  EXPECT_TRUE(eventually(&clock, [&] { return r.calls("ns/a") == 2; }));
}

TEST(ControllerTest, StopWaitsForInFlightReconciles) {
  ScriptedReconciler r;
  std::promise<void> entered;
  std::atomic<bool> finished{false};
  r.script = [&](const Request&, int) {
    entered.set_value();
    std::this_thread::sleep_for(200ms);
    finished = true;
    return Result::done();
  };
  Controller c("test", r);
  auto running = std::make_unique<Running>(c);
  c.enqueue("ns/slow");
  entered.get_future().wait();
  running.reset();  // stop and join
  EXPECT_TRUE(finished.load()) << "run() returned before the in-flight reconcile finished";
}

}  // namespace
}  // namespace banlieue::runtime

namespace banlieue::runtime {
namespace {

rapidjson::Document parseJson(const char* text) {
  rapidjson::Document d;
  d.Parse(text);
  return d;
}

TEST(ControllerTest, StatusOnlyUpdatesAreToldApartFromEveryOtherChange) {
  auto base = parseJson(
      R"({"metadata":{"name":"m","resourceVersion":"1","finalizers":["f"]},"spec":{"cpus":2},
          "status":{"message":"t1"}})");
  // Status, resourceVersion and managedFields only: what a writer of status causes.
  EXPECT_TRUE(onlyStatusChanged(base, parseJson(R"({"metadata":{"name":"m","resourceVersion":"2",
      "finalizers":["f"],"managedFields":[{"manager":"x"}]},"spec":{"cpus":2},
      "status":{"message":"t2"}})")));
  EXPECT_TRUE(onlyStatusChanged(base, parseJson(R"({"metadata":{"name":"m","resourceVersion":"2",
      "finalizers":["f"]},"spec":{"cpus":2}})")));
  // Anything else is a change the reconciler must see.
  EXPECT_FALSE(onlyStatusChanged(base, parseJson(R"({"metadata":{"name":"m",
      "resourceVersion":"2","finalizers":["f"]},"spec":{"cpus":4},"status":{"message":"t1"}})")));
  EXPECT_FALSE(onlyStatusChanged(base, parseJson(R"({"metadata":{"name":"m",
      "resourceVersion":"2","finalizers":["f"],"deletionTimestamp":"now"},"spec":{"cpus":2}})")));
  EXPECT_FALSE(onlyStatusChanged(base, parseJson(R"({"metadata":{"name":"m",
      "resourceVersion":"2"},"spec":{"cpus":2},"status":{"message":"t1"}})")));
  EXPECT_FALSE(onlyStatusChanged(base, parseJson(R"({"metadata":{"name":"m",
      "resourceVersion":"2","finalizers":["f"]},"spec":{"cpus":2},"extra":1})")));
}

}  // namespace
}  // namespace banlieue::runtime
