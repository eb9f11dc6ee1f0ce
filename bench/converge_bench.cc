// The two timed halves of scripts/bench.sh, run against the same apiserver in the same run:
//
//   converge_bench converge <kubeconfig> <namespace> <vms> <threads> <timeout-seconds>
//     Creates <vms> VirtualMachines (class and image "bench", created by the script) from
//     <threads> threads and waits, through a watch, until every one reports Ready=True; the
//     controller and provider processes the script started do the rest.
//
//   converge_bench limit <kubeconfig> <template-namespace> <template-vm> <namespace> <vms>
//   <threads> [apply]
//     The minimal client: for each VM, the same user create plus only the writes no correct
//     system can skip, made directly and in dependency order, with payloads copied from the
//     converged template VM and its FileMachine so every object has the same size:
//       1. create the VirtualMachine                     (the user's write, as above)
//       2. patch its finalizer                           (delete must wait for the backend)
//       3. create the FileMachine, owned by the VM       (the infra object)
//       4. patch the FileMachine finalizer               (before any backend work, so a backend
//                                                         VM never exists without it)
//       5. patch the FileMachine spec.providerID         (known only once the backend answered;
//                                                         status is a subresource, so apart)
//       6. patch the FileMachine status                  (the backend reports Ready)
//       7. patch the VirtualMachine status               (Ready mirrored to the user)
//     Nothing else: no reads, no watches, no Events, no intermediate conditions. Writes 2-7
//     are the 6 per VM that no correct controller + provider pair can skip.
//     With `apply`, writes 3, 6 and 7 are server-side applies with the roles' field managers,
//     as the roles make them (the infra object's create, both statuses); the others stay merge
//     patches, as in the roles. Same requests, so the difference is what apply costs the
//     apiserver.
//
// Both print one JSON object on stdout. The client is not rate-limited (qps 0): the apiserver,
// not a client-side budget, is what the limit measures.
#include "bench/bench_support.h"
#include "host/common/allocator_tuning.h"
#include "host/common/logging.h"
#include "host/kube/client.h"
#include "host/runtime/informer.h"

#include <banlieue/sdk/json.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace banlieue;
namespace json = sdk::json;
using bench::Clock;
using bench::parallel;
using bench::seconds;

// The apiserver, not a client-side budget, is what both halves measure.
constexpr kube::ClientOptions kUnthrottled{.qps = 0, .burst = 0};

const kube::ResourceType kVirtualMachine{"banlieue.io", "v1alpha1", "virtualmachines", true};
const kube::ResourceType kFileMachine{"infrastructure.file.example.com", "v1alpha1", "filemachines",
                                      true};

template <typename T>
T check(StatusOr<T> result, const std::string& what) {
  if (!result.ok()) throw std::runtime_error(what + ": " + result.status().message());
  return std::move(result).value();
}

std::string vmName(int i) {
  return "vm-" + std::to_string(i);
}

std::string vmManifest(const std::string& ns, int i, const std::string& spec_json) {
  return R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VirtualMachine","metadata":{"name":")" +
         vmName(i) + R"(","namespace":")" + ns + R"(","labels":{"app":"bench"}},"spec":)" +
         spec_json + "}";
}

bool isReady(const rapidjson::Value& vm) {
  const auto* conditions = json::find(&vm, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return false;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == "Ready") return json::stringOr(&c, "status") == "True";
  }
  return false;
}

int converge(const std::string& kubeconfig, const std::string& ns, int n, int threads,
             int timeout_seconds) {
  auto writer = bench::connect(kubeconfig, kUnthrottled);
  auto reader = bench::connect(kubeconfig, kUnthrottled);
  std::mutex mu;
  std::set<std::string> ready;
  auto observe = [&](const runtime::Object& vm) {
    std::lock_guard lock(mu);
    if (isReady(*vm)) {
      ready.insert(runtime::objectKey(*vm));
    } else {
      ready.erase(runtime::objectKey(*vm));
    }
  };
  runtime::Informer informer(*reader, kVirtualMachine, {.ns = ns});
  informer.addHandler(
      {observe, [&](const runtime::Object&, const runtime::Object& vm) { observe(vm); }, nullptr});
  std::atomic<bool> stop{false};
  std::thread watcher([&] { informer.run(stop); });
  while (!informer.hasSynced()) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  const std::string spec = R"({"classRef":{"name":"bench"},"imageRef":{"name":"bench"}})";
  auto started = Clock::now();
  std::string failure;
  try {
    parallel(n, threads, [&](int i) {
      check(writer->create(kVirtualMachine, ns, vmManifest(ns, i, spec)), "create " + vmName(i));
    });
  } catch (const std::exception& e) {
    failure = e.what();
  }
  double create_s = seconds(Clock::now() - started);
  size_t ready_count = 0;
  while (failure.empty()) {
    {
      std::lock_guard lock(mu);
      ready_count = ready.size();
    }
    if (ready_count >= static_cast<size_t>(n)) break;
    if (seconds(Clock::now() - started) > timeout_seconds) {
      failure = "only " + std::to_string(ready_count) + " of " + std::to_string(n) +
                " VirtualMachines were Ready after " + std::to_string(timeout_seconds) + " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  double converge_s = seconds(Clock::now() - started);
  stop = true;
  watcher.join();
  if (!failure.empty()) {
    std::fprintf(stderr, "converge_bench: %s\n", failure.c_str());
    return 1;
  }
  std::printf("{\"vms\":%d,\"threads\":%d,\"create_seconds\":%.3f,\"converge_seconds\":%.3f}\n", n,
              threads, create_s, converge_s);
  return 0;
}

// The template's `field` (spec or status) as JSON text, with what the apiserver owns removed.
std::string copied(const rapidjson::Value& object, const char* field) {
  const auto* value = json::member(&object, field);
  if (value == nullptr) throw std::runtime_error(std::string("the template has no ") + field);
  rapidjson::Document copy;
  copy.CopyFrom(*value, copy.GetAllocator());
  if (std::string(field) == "spec") copy.RemoveMember("providerID");
  return json::serialize(copy);
}

// What the roles apply: the controller the infra object and the VM's status, the provider the
// infra object's status (host/roles/controller/infra_builder.h, provider/runtime_context.h).
const kube::ApplyOptions kControllerApply{.field_manager = "banlieue.io/controller", .force = true};
const kube::ApplyOptions kControllerStatusApply{
    .field_manager = "banlieue.io/controller", .force = true, .subresource = "status"};
const kube::ApplyOptions kProviderStatusApply{
    .field_manager = "banlieue.io/provider-file", .force = true, .subresource = "status"};

std::string statusBody(const char* api_version, const char* kind, const std::string& ns,
                       const std::string& name, const std::string& status) {
  return std::string(R"({"apiVersion":")") + api_version + R"(","kind":")" + kind +
         R"(","metadata":{"name":")" + name + R"(","namespace":")" + ns + R"("},"status":)" +
         status + "}";
}

int limit(const std::string& kubeconfig, const std::string& template_ns,
          const std::string& template_vm, const std::string& ns, int n, int threads,
          bool by_apply) {
  auto client = bench::connect(kubeconfig, kUnthrottled);
  auto vm = check(client->get(kVirtualMachine, template_ns, template_vm), "read the template VM");
  auto machine =
      check(client->get(kFileMachine, template_ns, template_vm), "read the template FileMachine");
  if (!isReady(vm)) throw std::runtime_error("the template VM is not Ready");
  const std::string vm_spec = copied(vm, "spec");
  const std::string vm_status = copied(vm, "status");
  const std::string machine_spec = copied(machine, "spec");
  const std::string machine_status = copied(machine, "status");
  const std::string provider_id = json::stringOr(&machine, "spec.providerID");
  const auto* labels = json::find(&machine, "metadata.labels");
  const std::string machine_labels = labels != nullptr ? json::serialize(*labels) : "{}";

  std::atomic<int> writes{0};
  auto started = Clock::now();
  parallel(n, threads, [&](int i) {
    const std::string name = vmName(i);
    auto created = check(client->create(kVirtualMachine, ns, vmManifest(ns, i, vm_spec)),
                         "create VirtualMachine " + name);
    check(client->patch(kVirtualMachine, ns, name, kube::PatchType::kMerge,
                        R"({"metadata":{"finalizers":["banlieue.io/virtualmachine"]}})"),
          "finalizer of VirtualMachine " + name);
    const std::string uid = json::stringOr(&created, "metadata.uid");
    const std::string infra =
        R"({"apiVersion":"infrastructure.file.example.com/v1alpha1","kind":"FileMachine",)"
        R"("metadata":{"name":")" +
        name + R"(","namespace":")" + ns + R"(","labels":)" + machine_labels +
        R"(,"ownerReferences":[{"apiVersion":"banlieue.io/v1alpha1",)"
        R"("kind":"VirtualMachine","name":")" +
        name + R"(","uid":")" + uid +
        R"(","controller":true,"blockOwnerDeletion":true}]},"spec":)" + machine_spec + "}";
    check(by_apply ? client->apply(kFileMachine, ns, name, infra, kControllerApply)
                   : client->create(kFileMachine, ns, infra),
          "create FileMachine " + name);
    check(client->patch(kFileMachine, ns, name, kube::PatchType::kMerge,
                        R"({"metadata":{"finalizers":["banlieue.io/provider-file"]}})"),
          "finalizer of FileMachine " + name);
    check(client->patch(kFileMachine, ns, name, kube::PatchType::kMerge,
                        R"({"spec":{"providerID":")" + provider_id + R"("}})"),
          "providerID of FileMachine " + name);
    if (by_apply) {
      check(client->apply(kFileMachine, ns, name,
                          statusBody("infrastructure.file.example.com/v1alpha1", "FileMachine", ns,
                                     name, machine_status),
                          kProviderStatusApply),
            "status of FileMachine " + name);
      check(client->apply(kVirtualMachine, ns, name,
                          statusBody("banlieue.io/v1alpha1", "VirtualMachine", ns, name, vm_status),
                          kControllerStatusApply),
            "status of VirtualMachine " + name);
    } else {
      check(client->patch(kFileMachine, ns, name, kube::PatchType::kMerge,
                          R"({"status":)" + machine_status + "}", "status"),
            "status of FileMachine " + name);
      check(client->patch(kVirtualMachine, ns, name, kube::PatchType::kMerge,
                          R"({"status":)" + vm_status + "}", "status"),
            "status of VirtualMachine " + name);
    }
    writes += 7;
  });
  double limit_s = seconds(Clock::now() - started);
  std::printf(
      "{\"vms\":%d,\"threads\":%d,\"limit_seconds\":%.3f,\"writes\":%d,\"writes_per_vm\":7,"
      "\"unavoidable_writes_per_vm\":6,\"by_apply\":%s}\n",
      n, threads, limit_s, writes.load(), by_apply ? "true" : "false");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  common::tuneAllocatorForServer();
  common::configureLogging(spdlog::level::warn, common::LogFormat::kText);
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 6 && args[0] == "converge") {
      return converge(args[1], args[2], std::stoi(args[3]), std::stoi(args[4]), std::stoi(args[5]));
    }
    if ((args.size() == 7 || (args.size() == 8 && args[7] == "apply")) && args[0] == "limit") {
      return limit(args[1], args[2], args[3], args[4], std::stoi(args[5]), std::stoi(args[6]),
                   args.size() == 8);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "converge_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: converge_bench converge <kubeconfig> <ns> <vms> <threads> <timeout-s>\n"
               "       converge_bench limit <kubeconfig> <template-ns> <template-vm> <ns> <vms> "
               "<threads> [apply]\n");
  return 2;
}
