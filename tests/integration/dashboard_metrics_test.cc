// The Grafana dashboard in deploy/monitoring/ against what the roles really serve: a real
// `banlieue controller` and a real `banlieue provider` (with the test plugin) run against the
// local cluster and do some work, their /metrics are scraped, and every metric name any panel's
// PromQL (or the dashboard's variable query) names must be among the samples one of them serves.
// A metric renamed or dropped in the code, or mistyped in the dashboard, fails here.
#include "tests/integration/provider_process_fixture.h"
#include "tests/support/free_port.h"

#include <banlieue/sdk/json.h>

#include <fstream>
#include <set>
#include <sstream>

namespace banlieue::testing {
namespace {

namespace json = sdk::json;
using DashboardMetricsTest = ProviderProcessTest;

// The names of the samples in a Prometheus text scrape (histograms as name_bucket, _sum, _count).
std::set<std::string> sampleNames(const std::string& scrape) {
  std::set<std::string> names;
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  return names;
}

bool identifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool identifierChar(char c) {
  return identifierStart(c) || std::isdigit(static_cast<unsigned char>(c));
}

// The metric names a PromQL expression selects: identifiers outside label matchers, ranges and
// strings that are not a function (followed by '('), an aggregation operator, a keyword, a
// grouping label list (by/without/on/ignoring/group_left/group_right (...)) or a Grafana
// variable.
std::set<std::string> metricNames(const std::string& expr) {
  static const std::set<std::string> kKeywords{
      "by",           "without", "on",         "ignoring",    "bool",   "and",    "or",
      "unless",       "offset",  "group_left", "group_right", "inf",    "nan",    "sum",
      "min",          "max",     "avg",        "group",       "stddev", "stdvar", "count",
      "count_values", "bottomk", "topk",       "quantile"};
  static const std::set<std::string> kGrouping{"by",       "without",    "on",
                                               "ignoring", "group_left", "group_right"};
  std::string text;
  char closing = 0;
  for (char c : expr) {  // drop {...}, [...] and "..." contents
    if (closing != 0) {
      if (c == closing) closing = 0;
      continue;
    }
    if (c == '{') closing = '}';
    if (c == '[') closing = ']';
    if (c == '"') closing = '"';
    text += closing != 0 ? ' ' : c;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < text.size();) {
    if (!identifierStart(text[i]) ||
        (i > 0 && (identifierChar(text[i - 1]) || text[i - 1] == '$' || text[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && identifierChar(text[end])) ++end;
    std::string word = text.substr(i, end - i);
    size_t next = text.find_first_not_of(' ', end);
    bool call = next != std::string::npos && text[next] == '(';
    if (kGrouping.count(word) != 0 && call) {
      end = text.find(')', next);  // skip the label list
      if (end == std::string::npos) end = text.size();
    } else if (!call && kKeywords.count(word) == 0) {
      names.insert(word);
    }
    i = end;
  }
  return names;
}

TEST(DashboardMetricNamesTest, PromqlMetricNamesAreFoundAndLabelsAreNot) {
  EXPECT_EQ(metricNames("histogram_quantile(0.99, sum by (controller, le) (rate("
                        "controller_runtime_reconcile_time_seconds_bucket{job=~\"$job\"}"
                        "[$__rate_interval])))"),
            (std::set<std::string>{"controller_runtime_reconcile_time_seconds_bucket"}));
  EXPECT_EQ(metricNames("time() - process_start_time_seconds{job=~\"$job\"}"),
            (std::set<std::string>{"process_start_time_seconds"}));
  EXPECT_EQ(metricNames("process_open_fds / on (pod) group_left process_max_fds"),
            (std::set<std::string>{"process_open_fds", "process_max_fds"}));
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string curl(int port, const std::string& path) {
  return runCommand("curl -s --max-time 10 http://127.0.0.1:" + std::to_string(port) + path).output;
}

TEST_F(DashboardMetricsTest, EveryPanelQueriesMetricsTheRunningRolesServe) {
  // A provider that has called its plugin, with /metrics on its health port.
  metrics_port_ = "0";
  startProvider();
  applyMachine("m", "");
  ASSERT_TRUE(LocalCluster::eventually([&] { return readyReason("m") == "Provisioned"; }, 60s))
      << diagnostics();
  int provider_port = healthPort();
  ASSERT_GT(provider_port, 0) << diagnostics();

  // A controller that leads and has reconciled a VM.
  int port = freePort();
  BackgroundProcess controller(
      {BANLIEUE_BINARY, "controller", "--kubeconfig", cluster_.kubeconfig().string(),
       "--leader-election-namespace", ns_->name(), "--namespace", ns_->name(),
       "--leader-election-identity", "dashboard-test", "--bind-address", "127.0.0.1",
       "--health-port", std::to_string(port), "--metrics-port", std::to_string(port)});
  ASSERT_TRUE(controller.started());
  auto readyz = [&] {
    return runCommand("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:" +
                      std::to_string(port) + "/readyz")
        .output;
  };
  ASSERT_TRUE(LocalCluster::eventually([&] { return readyz() == "200"; }, 60s))
      << controller.output();
  ASSERT_EQ(cluster_
                .apply("apiVersion: banlieue.io/v1alpha1\nkind: VirtualMachine\nmetadata:\n  "
                       "name: lonely\nspec:\n  classRef: {name: no-such-class-" +
                           ns_->name() + "}\n  imageRef: {name: no-such-image}\n",
                       "-n " + ns_->name())
                .exit_code,
            0);
  std::string controller_scrape;
  EXPECT_TRUE(LocalCluster::eventually([&] {
    controller_scrape = curl(port, "/metrics");
    return controller_scrape.find("banlieue_virtual_machines{phase=\"NotReady\"} 1\n") !=
           std::string::npos;
  })) << controller_scrape
      << controller.output();
  std::string provider_scrape = curl(provider_port, "/metrics");

  std::set<std::string> served = sampleNames(controller_scrape);
  for (const auto& name : sampleNames(provider_scrape)) served.insert(name);
  ASSERT_GT(served.size(), 20u) << controller_scrape << provider_scrape;

  auto dashboard = json::parse(
      readFile(std::string(BANLIEUE_SOURCE_DIR) + "/deploy/monitoring/banlieue-dashboard.json"),
      "banlieue-dashboard.json");
  std::set<std::string> referenced;
  int queries = 0;
  auto check = [&](const std::string& where, const std::set<std::string>& names) {
    for (const auto& name : names) {
      referenced.insert(name);
      EXPECT_TRUE(served.count(name) != 0)
          << where << " queries " << name << ", which neither the controller nor the provider "
          << "serves";
    }
  };
  const auto* panels = json::find(&dashboard, "panels");
  ASSERT_TRUE(panels != nullptr && panels->IsArray());
  for (const auto& panel : panels->GetArray()) {
    if (json::stringOr(&panel, "type") == "row") continue;
    std::string title = json::stringOr(&panel, "title");
    const auto* targets = json::find(&panel, "targets");
    ASSERT_TRUE(targets != nullptr && targets->IsArray() && !targets->Empty())
        << "panel '" << title << "' has no query";
    for (const auto& target : targets->GetArray()) {
      std::string expr = json::stringOr(&target, "expr");
      auto names = metricNames(expr);
      EXPECT_FALSE(names.empty()) << "panel '" << title << "': no metric in " << expr;
      check("panel '" + title + "'", names);
      ++queries;
    }
  }
  const auto* variables = json::find(&dashboard, "templating.list");
  ASSERT_TRUE(variables != nullptr && variables->IsArray());
  for (const auto& variable : variables->GetArray()) {
    std::string query = json::stringOr(&variable, "query.query");
    if (query.rfind("label_values(", 0) != 0) continue;
    std::string metric = query.substr(13, query.find_first_of(",{)") - 13);
    check("variable '" + json::stringOr(&variable, "name") + "'", {metric});
  }
  EXPECT_GE(queries, 20);
  // The names the issue asks for are on the dashboard.
  for (const char* required : {"controller_runtime_reconcile_total",
                               "controller_runtime_reconcile_errors_total",
                               "controller_runtime_reconcile_time_seconds_bucket",
                               "controller_runtime_max_concurrent_reconciles",
                               "controller_runtime_active_workers",
                               "workqueue_depth",
                               "workqueue_adds_total",
                               "workqueue_retries_total",
                               "workqueue_queue_duration_seconds_bucket",
                               "workqueue_work_duration_seconds_bucket",
                               "workqueue_unfinished_work_seconds",
                               "workqueue_longest_running_processor_seconds",
                               "rest_client_requests_total",
                               "banlieue_plugin_call_duration_seconds_bucket",
                               "banlieue_virtual_machines",
                               "banlieue_providers",
                               "process_cpu_seconds_total",
                               "process_resident_memory_bytes",
                               "process_open_fds",
                               "process_max_fds",
                               "process_start_time_seconds",
                               "process_virtual_memory_bytes"}) {
    EXPECT_TRUE(referenced.count(required) != 0) << "no panel shows " << required;
  }

  EXPECT_EQ(controller.terminate(), 0) << controller.output();
  // The VM's finalizer would keep the namespace; the controller is gone, so drop it.
  cluster_.kubectl("patch bvm lonely -n " + ns_->name() +
                   " --type merge -p '{\"metadata\":{\"finalizers\":null}}'");
}

}  // namespace
}  // namespace banlieue::testing
