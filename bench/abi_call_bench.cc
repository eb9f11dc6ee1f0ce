// What one call through banlieue_provider_v1 costs the host, with a realistic payload: a
// ~4 KiB infra object serialised by the host, parsed by the plugin (SDK), answered with a
// status document, and the reply parsed back by the host. Loaded through the real loader
// from a real .so, so dlopen'd indirect calls, sinks and contract checks are all included.
#include "host/common/allocator_tuning.h"
#include "host/common/logging.h"
#include "host/plugin/loader.h"

#include <banlieue/sdk/json.h>

#include <benchmark/benchmark.h>

#include <string>

namespace {

using banlieue::plugin::CallOptions;
using banlieue::plugin::PluginInstance;

// A LibvirtMachine-sized object: labels, annotations, managed fields, spec and status.
rapidjson::Document realisticObject(size_t target_bytes) {
  auto doc = banlieue::sdk::json::parse(
      R"({"apiVersion":"infrastructure.test.banlieue.io/v1beta2","kind":"TestMachine",
    "metadata":{"name":"web-7f9c2","namespace":"team-a","uid":"6f1c0a52-8d4e-4f5b-9a51-0c3f2d7e9b11",
      "generation":3,"resourceVersion":"482913","labels":{},"annotations":{},
      "ownerReferences":[{"apiVersion":"banlieue.io/v1alpha1","kind":"VirtualMachine","name":"web-7f9c2",
        "uid":"0d6f6c1e-2b1a-4d0c-8f7e-9a0b1c2d3e4f","controller":true,"blockOwnerDeletion":true}]},
    "spec":{"providerID":"","failureDomain":"dc1-cluster-a","cpus":4,"memoryMiB":8192,
      "disks":[{"name":"root","sizeGiB":40,"storageClass":"gold"}],
      "networks":[{"name":"prod","networkClass":"prod","macAddress":"52:54:00:12:34:56"}],
      "image":{"name":"ubuntu-24.04","checksum":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
      "firmware":"efi","features":["vtpm","efiSecureBoot"]},
    "status":{"conditions":[{"type":"Ready","status":"False","reason":"Provisioning","message":"creating"}]}})",
      "bench object");
  auto& a = doc.GetAllocator();
  for (int i = 0; banlieue::sdk::json::serialize(doc).size() < target_bytes; ++i) {
    std::string key = "banlieue.io/annotation-" + std::to_string(i);
    doc["metadata"]["annotations"].AddMember(
        banlieue::sdk::json::stringValue(key, a),
        banlieue::sdk::json::stringValue(std::string(48, 'x'), a), a);
  }
  return doc;
}

struct Fixture {
  std::shared_ptr<banlieue::plugin::Plugin> plugin;
  std::unique_ptr<PluginInstance> instance;
  rapidjson::Document object;
  uint64_t events = 0;

  Fixture() {
    auto loaded =
        banlieue::plugin::PluginLoader({.plugin_root = BENCH_PLUGIN_ROOT}).load("testprov");
    if (!loaded.ok()) throw std::runtime_error(loaded.status().message());
    plugin = *loaded;
    banlieue::plugin::CallResult created;
    instance = plugin->createInstance(
        R"({"provider":{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider","metadata":{"name":"p"},"spec":{"connection":{"endpoint":"test://"}}}})",
        {}, created);
    if (!instance) throw std::runtime_error(created.outcome.message);
    // The provider runtime records events through the API; here they are only counted.
    plugin->services().setEventHandler([this](const banlieue::plugin::PluginEvent&) { ++events; });
    object = realisticObject(4096);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// The headline figure: one reconcile through the ABI. The host holds each object's JSON text
// (as the API server sent it) and wraps it in the request envelope; the plugin parses the
// request and answers; the host parses the reply body.
void BM_ReconcileRoundTrip4KiB(benchmark::State& state) {
  auto& f = fixture();
  const std::string uid = "6f1c0a52-8d4e-4f5b-9a51-0c3f2d7e9b11";
  const std::string object_text = banlieue::sdk::json::serialize(f.object);
  CallOptions options{.object_uid = uid};
  size_t request_bytes = 0;
  for (auto _ : state) {
    std::string request =
        R"({"object":)" + object_text + R"(,"operation":{"token":"task-)" + uid + R"("}})";
    request_bytes = request.size();
    auto result = f.instance->reconcile("TestMachine", request, options);
    if (!result.ok()) state.SkipWithError("reconcile failed");
    auto reply = banlieue::sdk::json::parse(result.outcome.body, "reply");
    benchmark::DoNotOptimize(reply);
  }
  state.counters["request_bytes"] = static_cast<double>(request_bytes);
}
BENCHMARK(BM_ReconcileRoundTrip4KiB);

// The same, when the host must also serialise the object from a parsed document.
void BM_ReconcileRoundTripWithHostSerialize4KiB(benchmark::State& state) {
  auto& f = fixture();
  const std::string uid = "6f1c0a52-8d4e-4f5b-9a51-0c3f2d7e9b11";
  CallOptions options{.object_uid = uid};
  for (auto _ : state) {
    std::string request = R"({"object":)" + banlieue::sdk::json::serialize(f.object) +
                          R"(,"operation":{"token":"task-)" + uid + R"("}})";
    auto result = f.instance->reconcile("TestMachine", request, options);
    if (!result.ok()) state.SkipWithError("reconcile failed");
    auto reply = banlieue::sdk::json::parse(result.outcome.body, "reply");
    benchmark::DoNotOptimize(reply);
  }
}
BENCHMARK(BM_ReconcileRoundTripWithHostSerialize4KiB);

// The boundary alone: a slot that returns at once (a kind the plugin rejects before parsing
// anything heavy), showing what the envelope, sinks and contract checks cost.
void BM_CallEnvelopeOnly(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) {
    auto result = f.plugin->validate("TestMachine", R"({"object":{}})");
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_CallEnvelopeOnly);

// JSON alone, to separate parse cost from the boundary: serialise + parse the same object.
void BM_JsonOnly4KiB(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) {
    std::string text = banlieue::sdk::json::serialize(f.object);
    auto doc = banlieue::sdk::json::parse(text, "object");
    benchmark::DoNotOptimize(doc);
  }
}
BENCHMARK(BM_JsonOnly4KiB);

}  // namespace

int main(int argc, char** argv) {
  banlieue::common::tuneAllocatorForServer();  // as the banlieue binary does
  // As in production at the default level: plugin info lines are enabled, debug is not.
  banlieue::common::configureLogging(spdlog::level::warn, banlieue::common::LogFormat::kText);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
