// What an SRE's Prometheus sees (issue #22): controller-runtime's and client-go's metric names
// and labels, so their dashboards and alerts fit; plugin calls per slot and code; object counts
// by phase; process_* read from /proc at scrape time.
#include "host/common/metrics.h"
#include "host/kube/client.h"
#include "host/plugin/plugin.h"
#include "host/runtime/cache_metrics.h"
#include "host/runtime/controller.h"
#include "host/runtime/work_queue.h"
#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <regex>
#include <thread>

namespace banlieue {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// The value of one series in the global registry's scrape, or -1 when it is missing.
double scraped(const std::string& series) {
  std::string text = MetricsRegistry::global().render();
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      size_t start = at + series.size() + 1;
      return std::stod(text.substr(start, text.find('\n', start) - start));
    }
    ++at;
  }
  return -1;
}

bool waitFor(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

class ScriptedReconciler final : public runtime::Reconciler {
 public:
  runtime::Result reconcile(const runtime::Request& request) override {
    if (request.name == "later") return runtime::Result::requeueAfter(1h);
    if (request.name == "bad")
      return runtime::Result::terminal(error(Code::kInvalidArgument, "Bad", "bad"));
    return runtime::Result::done();
  }
};

TEST(MetricsUxTest, ControllerExportsControllerRuntimeNamesAndResults) {
  ScriptedReconciler reconciler;
  runtime::Controller controller("uxctl", reconciler, {.workers = 3});
  for (const char* key : {"ns/ok", "ns/later", "ns/bad"}) controller.enqueue(key);
  std::atomic<bool> stop{false};
  std::thread runner([&] { controller.run(stop); });
  EXPECT_TRUE(waitFor([&] { return controller.stats().reconciles == 3; }));
  stop = true;
  runner.join();

  const std::string c = "{controller=\"uxctl\"";
  EXPECT_EQ(scraped("controller_runtime_reconcile_total" + c + ",result=\"success\"}"), 1);
  EXPECT_EQ(scraped("controller_runtime_reconcile_total" + c + ",result=\"requeue_after\"}"), 1);
  EXPECT_EQ(scraped("controller_runtime_reconcile_total" + c + ",result=\"error\"}"), 1);
  EXPECT_EQ(scraped("controller_runtime_reconcile_total" + c + ",result=\"requeue\"}"), 0);
  EXPECT_EQ(scraped("controller_runtime_reconcile_errors_total" + c + "}"), 1);
  EXPECT_EQ(scraped("controller_runtime_terminal_reconcile_errors_total" + c + "}"), 1);
  EXPECT_EQ(scraped("controller_runtime_reconcile_time_seconds_count" + c + "}"), 3);
  EXPECT_EQ(scraped("controller_runtime_max_concurrent_reconciles" + c + "}"), 3);
  EXPECT_EQ(scraped("controller_runtime_active_workers" + c + "}"), 0);

  const std::string q = "{name=\"uxctl\",controller=\"uxctl\"}";
  EXPECT_EQ(scraped("workqueue_adds_total" + q), 3);
  EXPECT_EQ(scraped("workqueue_depth" + q), 0);
  EXPECT_EQ(scraped("workqueue_retries_total" + q), 0);
  EXPECT_EQ(scraped("workqueue_queue_duration_seconds_count" + q), 3);
  EXPECT_EQ(scraped("workqueue_work_duration_seconds_count" + q), 3);
  EXPECT_EQ(scraped("workqueue_unfinished_work_seconds" + q), 0);
  EXPECT_EQ(scraped("workqueue_longest_running_processor_seconds" + q), 0);

  std::string text = MetricsRegistry::global().render();
  EXPECT_THAT(text, Not(HasSubstr("banlieue_reconcile"))) << "the old names are gone";
  EXPECT_THAT(text, Not(HasSubstr("banlieue_workqueue")));
}

TEST(MetricsUxTest, WorkInProgressIsMeasuredAtScrapeTime) {
  runtime::FakeClock clock;
  runtime::WorkQueue queue(clock, "uxqueue");
  queue.add("a");
  queue.add("b");
  ASSERT_EQ(queue.get(), "a");
  clock.advance(2s);
  ASSERT_EQ(queue.get(), "b");
  clock.advance(3s);
  const std::string q = "{name=\"uxqueue\",controller=\"uxqueue\"}";
  EXPECT_EQ(scraped("workqueue_unfinished_work_seconds" + q), 8);  // 5 s of a, 3 s of b
  EXPECT_EQ(scraped("workqueue_longest_running_processor_seconds" + q), 5);
  queue.done("a");
  queue.done("b");
  EXPECT_EQ(scraped("workqueue_unfinished_work_seconds" + q), 0);
  EXPECT_EQ(scraped("workqueue_longest_running_processor_seconds" + q), 0);
  EXPECT_EQ(scraped("workqueue_work_duration_seconds_sum" + q), 8);
  queue.addRateLimited("a");
  EXPECT_EQ(scraped("workqueue_retries_total" + q), 1);
}

TEST(MetricsUxTest, ACollectorRunsAtEveryScrapeUntilItsHandleGoes) {
  MetricsRegistry registry;
  int scrapes = 0;
  {
    auto handle =
        registry.addCollector([&] { registry.gauge("t_scrapes", "Scrapes").set(++scrapes); });
    EXPECT_THAT(registry.render(), HasSubstr("t_scrapes 1\n"));
    EXPECT_THAT(registry.render(), HasSubstr("t_scrapes 2\n"));
  }
  EXPECT_THAT(registry.render(), HasSubstr("t_scrapes 2\n"));
  EXPECT_EQ(scrapes, 2);
}

TEST(MetricsUxTest, ProcessMetricsComeFromProc) {
  EXPECT_GT(scraped("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(scraped("process_virtual_memory_bytes"), scraped("process_resident_memory_bytes"));
  EXPECT_GE(scraped("process_open_fds"), 3);
  EXPECT_GE(scraped("process_max_fds"), scraped("process_open_fds"));
  EXPECT_GE(scraped("process_cpu_seconds_total"), 0);
  double started = scraped("process_start_time_seconds");
  double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(started, now + 1);
  EXPECT_GT(started, now - 3600) << "the test process started less than an hour ago";
  // CPU time grows with work, read fresh at each scrape.
  double before = scraped("process_cpu_seconds_total");
  auto until = std::chrono::steady_clock::now() + 300ms;
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < until) spin = spin + 1;
  EXPECT_GT(scraped("process_cpu_seconds_total"), before);
}

class OneHostTransport final : public kube::HttpTransport {
 public:
  std::deque<StatusOr<kube::HttpResponse>> responses;
  StatusOr<kube::HttpResponse> send(const kube::HttpRequest&) override {
    auto r = responses.front();
    responses.pop_front();
    return r;
  }
  StatusOr<kube::HttpResponse> stream(const kube::HttpRequest&,
                                      const std::function<bool(std::string_view)>&,
                                      const std::atomic<bool>*) override {
    return kube::HttpResponse{200, {}, {}};
  }
  std::string host() const override { return "apiserver.ux.test:6443"; }
};

TEST(MetricsUxTest, KubeClientCountsRequestsAsClientGoDoes) {
  auto transport = std::make_unique<OneHostTransport>();
  transport->responses.push_back(kube::HttpResponse{200, {}, R"({"metadata":{"name":"a"}})"});
  transport->responses.push_back(kube::HttpResponse{404, {}, R"({"kind":"Status","code":404})"});
  transport->responses.push_back(error(Code::kUnavailable, "ConnectionRefused", "refused"));
  auto client = kube::makeKubeClient(std::move(transport), {.qps = 0});
  const kube::ResourceType config_maps{"", "v1", "configmaps", true};
  for (int i = 0; i < 3; ++i) (void)client->get(config_maps, "default", "a");

  const std::string host = ",host=\"apiserver.ux.test:6443\"}";
  EXPECT_EQ(scraped("rest_client_requests_total{code=\"200\",method=\"GET\"" + host), 1);
  EXPECT_EQ(scraped("rest_client_requests_total{code=\"404\",method=\"GET\"" + host), 1);
  EXPECT_EQ(scraped("rest_client_requests_total{code=\"<error>\",method=\"GET\"" + host), 1);
  EXPECT_EQ(scraped("rest_client_request_duration_seconds_count{verb=\"GET\"" + host), 3);
  EXPECT_THAT(MetricsRegistry::global().render(), Not(HasSubstr("banlieue_kube_requests_total")));
}

banlieue_status describeOk(const banlieue_call*, banlieue_reply*) {
  return BANLIEUE_OK;
}

TEST(MetricsUxTest, PluginCallsAreTimedBySlotAndCode) {
  banlieue_provider_v1 table{};
  table.header.struct_size = sizeof(table);
  table.name = "uxprov";
  table.describe = describeOk;  // validate stays NULL: the host answers UNIMPLEMENTED
  static plugin::HostServices services("uxprov");
  auto loaded = std::make_shared<plugin::Plugin>(plugin::Manifest{},
                                                 sdk::abi::ProviderClient(&table), &services);
  const std::string metric = "banlieue_plugin_call_duration_seconds_count";
  double described = std::max(0.0, scraped(metric + "{slot=\"describe\",code=\"OK\"}"));
  (void)loaded->describe();
  (void)loaded->describe();
  (void)loaded->validate("TestMachine", "{}");
  EXPECT_EQ(scraped(metric + "{slot=\"describe\",code=\"OK\"}"), described + 2);
  EXPECT_EQ(scraped(metric + "{slot=\"validate\",code=\"UNIMPLEMENTED\"}"), 1);
}

rapidjson::Document parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  return d;
}

TEST(MetricsUxTest, ReadinessPhaseOfAnObject) {
  using runtime::readinessPhase;
  EXPECT_EQ(readinessPhase(parse(R"({"metadata":{"name":"a"}})")), "Pending");
  EXPECT_EQ(
      readinessPhase(parse(R"({"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}})")),
      "Pending");
  EXPECT_EQ(readinessPhase(parse(
                R"({"status":{"conditions":[{"type":"Scheduled","status":"True"},
                                            {"type":"Ready","status":"True"}]}})")),
            "Ready");
  EXPECT_EQ(
      readinessPhase(parse(R"({"status":{"conditions":[{"type":"Ready","status":"False"}]}})")),
      "NotReady");
  EXPECT_EQ(readinessPhase(parse(
                R"({"metadata":{"deletionTimestamp":"2025-01-01T00:00:00Z"},
                    "status":{"conditions":[{"type":"Ready","status":"True"}]}})")),
            "Deleting");
}

TEST(MetricsUxTest, ObjectsAreCountedByPhaseFromTheCacheAtScrapeTime) {
  testing::FakeKubeClient client;
  const kube::ResourceType config_maps{"", "v1", "configmaps", true};
  for (
      const char* object :
      {R"({"metadata":{"name":"a"}})",
       R"({"metadata":{"name":"b"},"status":{"conditions":[{"type":"Ready","status":"True"}]}})",
       R"({"metadata":{"name":"c"},"status":{"conditions":[{"type":"Ready","status":"True"}]}})"}) {
    ASSERT_TRUE(client.create(config_maps, "default", object).ok());
  }
  runtime::Informer informer(client, config_maps, {});
  auto gauge = runtime::exportPhaseGauge(MetricsRegistry::global(), "t_ux_objects",
                                         "Objects by phase", informer);
  std::atomic<bool> stop{false};
  std::thread runner([&] { informer.run(stop); });
  EXPECT_TRUE(waitFor([&] { return informer.hasSynced(); }));
  EXPECT_EQ(scraped("t_ux_objects{phase=\"Ready\"}"), 2);
  EXPECT_EQ(scraped("t_ux_objects{phase=\"Pending\"}"), 1);
  EXPECT_EQ(scraped("t_ux_objects{phase=\"NotReady\"}"), 0) << "every phase has a series";
  EXPECT_EQ(scraped("t_ux_objects{phase=\"Deleting\"}"), 0);
  stop = true;
  runner.join();
}

}  // namespace
}  // namespace banlieue
