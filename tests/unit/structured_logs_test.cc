// Structured logs (issue #22): every line written during a reconcile — the reconciler's own,
// the runtime's retry line — carries the controller, the object's namespace and name, and the
// reconcile's id, in JSON as keys and in text in brackets; lines outside a reconcile carry none.
#include "host/common/log_context.h"
#include "host/common/logging.h"
#include "host/runtime/controller.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <future>
#include <sstream>
#include <thread>

namespace banlieue {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;
namespace json = sdk::json;

// Routes every logger (the default one and the named children made after) to `out`.
class CapturedLogs {
 public:
  explicit CapturedLogs(common::LogFormat format) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_formatter(common::logFormatter(format));
    auto root = std::make_shared<spdlog::logger>("banlieue", sink);
    root->set_level(spdlog::level::info);
    spdlog::drop_all();
    spdlog::set_default_logger(root);
  }
  ~CapturedLogs() { common::configureLogging(spdlog::level::info, common::LogFormat::kText); }

  std::vector<std::string> lines() {
    spdlog::default_logger()->flush();
    std::vector<std::string> out;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  std::ostringstream out_;
};

TEST(StructuredLogsTest, JsonLinesWithinAReconcileCarryTheObjectsKeys) {
  CapturedLogs logs(common::LogFormat::kJson);
  auto log = common::logger("test.structured");
  log->info("before");
  {
    common::ScopedLogContext context({"virtualmachine", "team-a", "web-1", "00ff00ff00ff00ff"});
    log->info("inside \"quoted\"");
    {
      common::ScopedLogContext nested({"vmimage", "", "ubuntu", "1234567890abcdef"});
      log->info("nested");
    }
    log->info("restored");
  }
  log->info("after");
  auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 5u);
  std::vector<rapidjson::Document> docs;
  for (const auto& line : lines) docs.push_back(json::parse(line, "log line"));
  for (size_t i : {0u, 4u}) {
    EXPECT_EQ(json::find(&docs[i], "name"), nullptr) << lines[i];
    EXPECT_EQ(json::find(&docs[i], "controller"), nullptr) << lines[i];
  }
  for (size_t i : {1u, 3u}) {
    EXPECT_EQ(json::stringOr(&docs[i], "controller"), "virtualmachine") << lines[i];
    EXPECT_EQ(json::stringOr(&docs[i], "namespace"), "team-a") << lines[i];
    EXPECT_EQ(json::stringOr(&docs[i], "name"), "web-1") << lines[i];
    EXPECT_EQ(json::stringOr(&docs[i], "reconcileID"), "00ff00ff00ff00ff") << lines[i];
    EXPECT_EQ(json::stringOr(&docs[i], "logger"), "test.structured") << lines[i];
  }
  EXPECT_EQ(json::stringOr(&docs[1], "msg"), "inside \"quoted\"");
  EXPECT_EQ(json::stringOr(&docs[2], "controller"), "vmimage");
  EXPECT_EQ(json::find(&docs[2], "namespace"), nullptr) << "a cluster-scoped object";
  EXPECT_EQ(json::stringOr(&docs[2], "name"), "ubuntu");
}

TEST(StructuredLogsTest, TextLinesNameTheObjectInBrackets) {
  CapturedLogs logs(common::LogFormat::kText);
  auto log = common::logger("test.structured");
  log->info("outside");
  {
    common::ScopedLogContext context({"virtualmachine", "team-a", "web-1", "00ff00ff00ff00ff"});
    log->info("inside");
  }
  auto lines = logs.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("test.structured: outside"));
  EXPECT_THAT(lines[0], Not(HasSubstr("[")));
  EXPECT_THAT(lines[1],
              HasSubstr("test.structured [virtualmachine team-a/web-1 00ff00ff00ff00ff]: inside"));
}

class LoggingReconciler final : public runtime::Reconciler {
 public:
  runtime::Result reconcile(const runtime::Request& request) override {
    common::logger("test.reconciler")->info("reconciling");
    ++calls_;
    if (request.name == "fails" && calls_ < 3) {
      return runtime::Result::retry(sdk::Status{sdk::Code::kUnavailable, "BackendDown", "down"});
    }
    return {};
  }
  std::atomic<int> calls_{0};
};

TEST(StructuredLogsTest, EveryLineOfAControllersReconcileCarriesItsKeysAndItsOwnId) {
  CapturedLogs logs(common::LogFormat::kJson);
  LoggingReconciler reconciler;
  runtime::Controller controller("virtualmachine", reconciler, {.workers = 1});
  std::atomic<bool> stop{false};
  auto done = std::async(std::launch::async, [&] { controller.run(stop); });
  controller.enqueue("team-a/fails");
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (reconciler.calls_ < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  stop = true;
  done.wait();
  ASSERT_GE(reconciler.calls_.load(), 3);

  std::set<std::string> ids;
  int reconciling = 0, retries = 0;
  for (const auto& line : logs.lines()) {
    auto doc = json::parse(line, "log line");
    std::string msg = json::stringOr(&doc, "msg");
    if (msg != "reconciling" && msg.find("(retry") == std::string::npos) continue;
    EXPECT_EQ(json::stringOr(&doc, "controller"), "virtualmachine") << line;
    EXPECT_EQ(json::stringOr(&doc, "namespace"), "team-a") << line;
    EXPECT_EQ(json::stringOr(&doc, "name"), "fails") << line;
    EXPECT_EQ(json::stringOr(&doc, "reconcileID").size(), 16u) << line;
    if (msg == "reconciling") {
      ++reconciling;
      ids.insert(json::stringOr(&doc, "reconcileID"));
    } else {
      ++retries;
    }
  }
  EXPECT_GE(reconciling, 3);
  EXPECT_GE(retries, 2) << "the runtime's retry lines are within the reconcile's context";
  EXPECT_EQ(ids.size(), static_cast<size_t>(reconciling)) << "one id per reconcile";
}

}  // namespace
}  // namespace banlieue
