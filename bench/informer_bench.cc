// Informer and controller figures against a real apiserver (bench/informer_bench.sh starts
// one): list+watch sync time and RSS for N small ConfigMaps, watch events absorbed per
// second, and the throughput of a no-op controller. Prints one JSON object.
//   informer_bench <kubeconfig> [objects=10000] [--keep-write-bookkeeping] [--kubectl-applied]
// --keep-write-bookkeeping caches objects whole, managedFields included, as informers did
// before they dropped them (InformerOptions::keep_write_bookkeeping): the before/after of
// that change. --kubectl-applied creates each ConfigMap as `kubectl apply` would, with its
// manifest again in the last-applied-configuration annotation.
#include "bench/bench_support.h"
#include "host/common/allocator_tuning.h"
#include "host/common/logging.h"
#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <banlieue/sdk/json.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace banlieue;
using bench::Clock;
using bench::parallel;
using bench::seconds;

double rssMiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

class NoOp final : public runtime::Reconciler {
 public:
  explicit NoOp(runtime::Informer& cache) : cache_(cache) {}
  runtime::Result reconcile(const runtime::Request& r) override {
    if (cache_.get(r.key())) ++seen;
    return runtime::Result::done();
  }
  std::atomic<int> seen{0};

 private:
  runtime::Informer& cache_;
};

}  // namespace

int main(int argc, char** argv) {
  bool keep_bookkeeping = false;
  bool kubectl_applied = false;
  bool usage_error = argc < 2;
  for (int i = 3; i < argc; ++i) {
    std::string flag = argv[i];
    keep_bookkeeping |= flag == "--keep-write-bookkeeping";
    kubectl_applied |= flag == "--kubectl-applied";
    usage_error |= flag != "--keep-write-bookkeeping" && flag != "--kubectl-applied";
  }
  if (usage_error) {
    std::fprintf(stderr,
                 "usage: %s <kubeconfig> [objects] [--keep-write-bookkeeping] "
                 "[--kubectl-applied]\n",
                 argv[0]);
    return 2;
  }
  common::tuneAllocatorForServer();
  common::configureLogging(spdlog::level::warn, common::LogFormat::kText);
  const int n = argc > 2 ? std::stoi(argv[2]) : 10000;
  const std::string ns = "informer-bench";
  // The writer only sets the stage: unthrottled, so populate and burst times are the API
  // server's, not a client budget's (the reader keeps the roles' default).
  auto writer = bench::connect(argv[1], {.qps = 0, .burst = 0});
  (void)writer->create(
      kube::resources::kNamespace, "",
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns + R"("}})");
  auto populate_start = Clock::now();
  parallel(n, 8, [&](int i) {
    std::string manifest = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-)" +
                           std::to_string(i) + R"(","namespace":")" + ns +
                           R"(","labels":{"bench":"informer"}},"data":{"index":")" +
                           std::to_string(i) + R"("}})";
    if (kubectl_applied) {
      auto object = sdk::json::parse(manifest, "manifest");
      auto& a = object.GetAllocator();
      rapidjson::Value annotations(rapidjson::kObjectType);
      annotations.AddMember("kubectl.kubernetes.io/last-applied-configuration",
                            sdk::json::stringValue(manifest + "\n", a), a);
      object["metadata"].AddMember("annotations", annotations, a);
      manifest = sdk::json::serialize(object);
    }
    (void)writer->create(kube::resources::kConfigMap, ns, manifest);
  });
  double populate_s = seconds(Clock::now() - populate_start);

  auto reader = bench::connect(argv[1], {});
  double rss_before = rssMiB();
  runtime::Informer informer(*reader, kube::resources::kConfigMap,
                             {.ns = ns, .keep_write_bookkeeping = keep_bookkeeping});
  std::atomic<int> updates{0};
  informer.addHandler(
      {nullptr, [&](const runtime::Object&, const runtime::Object&) { ++updates; }, nullptr});
  std::atomic<bool> stop{false};
  auto sync_start = Clock::now();
  std::thread runner([&] { informer.run(stop); });
  while (!informer.hasSynced()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double sync_s = seconds(Clock::now() - sync_start);
  double rss_after = rssMiB();
  const size_t cache_bytes = informer.bytes();  // keys and packed texts (docs/adr/0055)

  // Watch absorption: the apiserver's write rate bounds it, so writers run in parallel and
  // the figure is events delivered into the cache per second over the burst.
  const int burst = std::min(n, 2000);
  auto burst_start = Clock::now();
  parallel(burst, 8, [&](int i) {
    (void)writer->patch(kube::resources::kConfigMap, ns, "cm-" + std::to_string(i),
                        kube::PatchType::kMerge, R"({"data":{"touched":"yes"}})");
  });
  while (updates.load() < burst && seconds(Clock::now() - burst_start) < 120) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  double burst_s = seconds(Clock::now() - burst_start);

  NoOp reconciler(informer);
  runtime::Controller controller("noop", reconciler, {.workers = 2});
  std::atomic<bool> stop_controller{false};
  auto reconcile_start = Clock::now();
  for (const auto& object : informer.list()) controller.enqueue(runtime::objectKey(*object));
  std::thread controller_thread([&] { controller.run(stop_controller); });
  while (reconciler.seen.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double reconcile_s = seconds(Clock::now() - reconcile_start);
  stop_controller = true;
  controller_thread.join();
  stop = true;
  runner.join();

  auto stats = informer.stats();
  std::printf(
      "{\"objects\":%d,\"kubectl_applied\":%s,\"write_bookkeeping\":\"%s\",\"populate_seconds\":%."
      "2f,\"list_watch_sync_"
      "seconds\":%.3f,"
      "\"rss_mib_before\":%.1f,\"rss_mib_after_sync\":%.1f,\"rss_mib_delta\":%.1f,"
      "\"rss_kib_per_object\":%.2f,\"cache_bytes_per_object\":%.1f,\"lists\":%llu,\"watch_events_"
      "absorbed\":%d,"
      "\"watch_events_per_second\":%.0f,\"noop_reconciles_per_second\":%.0f}\n",
      n, kubectl_applied ? "true" : "false", keep_bookkeeping ? "kept" : "dropped", populate_s,
      sync_s, rss_before, rss_after, rss_after - rss_before, (rss_after - rss_before) * 1024.0 / n,
      static_cast<double>(cache_bytes) / n, static_cast<unsigned long long>(stats.lists),
      updates.load(), updates.load() / burst_s, n / reconcile_s);
  return 0;
}
