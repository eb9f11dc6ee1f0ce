// Drives the built libbanlieue-provider-libvirt.so through the C ABI (dlopen + the SDK's
// ProviderClient and FakeHost), exactly as the host does, plus builders for the payloads.
#pragma once

#include <banlieue/sdk/abi_client.h>
#include <banlieue/sdk/json.h>
#include <banlieue/sdk/testing/fake_host.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace banlieue::libvirt::testing {

namespace json = sdk::json;

inline std::string pluginPath() {
  const char* path = std::getenv("BANLIEUE_LIBVIRT_PLUGIN");
  return path != nullptr ? path : "";
}

// A JSON string literal (quotes included).
inline std::string quote(std::string_view s) {
  rapidjson::Document d;
  return json::serialize(json::stringValue(s, d.GetAllocator()));
}

struct ProviderSpec {
  std::string endpoint = "test:///default";
  // spec.connection.allowTestDriver: without it the plugin refuses test:// endpoints.
  bool allow_test_driver = true;
  std::string storage_classes = R"([{"name":"fast","target":{"pool":"default-pool"}}])";
  std::string network_classes = R"([{"name":"lan","target":{"network":"default"}}])";
  std::string annotations = "{}";
  std::string credentials = "{}";
};

inline std::string providerJson(const ProviderSpec& p) {
  return R"({"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
    "metadata":{"name":"kvm1","namespace":"infra","uid":"prov-uid","annotations":)" +
         p.annotations + R"(},
    "spec":{"providerClassRef":{"name":"libvirt"},"connection":{"endpoint":)" +
         quote(p.endpoint) + R"(,"allowTestDriver":)" + (p.allow_test_driver ? "true" : "false") +
         R"(},
      "capabilities":{"storageClasses":)" +
         p.storage_classes + R"(,"networkClasses":)" + p.network_classes + "}}}";
}

inline std::string instanceConfig(const ProviderSpec& p) {
  return R"({"provider":)" + providerJson(p) + R"(,"credentials":)" + p.credentials + "}";
}

struct MachineOptions {
  std::string name = "web";
  std::string uid = "3f0c2a4e-0d7b-4c1e-9a55-6b1e2f3a4b5c";
  std::string domain_name;  // empty: default <namespace>-<name>
  std::string pool = "default-pool";
  std::string boot_volume = "base.qcow2";
  int root_gib = 4;
  int vcpus = 1;
  int memory_mib = 128;
  std::string extra_disks;  // ,{...}
  std::string network = R"([{"name":"nic0","source":{"kind":"network","name":"default"}}])";
  std::string power = "PoweredOn";
  std::string user_data;  // empty: none
  std::string annotations = "{}";
  std::string firmware = "bios";
  std::string restart_requested_at;  // empty: no restart request
  std::string resize_policy;         // empty: the default (Restart)
  std::string status;                // the object's status as JSON; empty: none
  std::string provider_id;           // spec.providerID (the runtime copies it from the status)
};

inline std::string machineObject(const MachineOptions& o) {
  std::string spec =
      R"({"pool":)" + quote(o.pool) + R"(,"bootSource":{"kind":"backingVolume","volume":)" +
      quote(o.boot_volume) + R"(},"vcpus":)" + std::to_string(o.vcpus) + R"(,"memoryMiB":)" +
      std::to_string(o.memory_mib) + R"(,"firmware":)" + quote(o.firmware) +
      R"(,"disks":[{"name":"root","sizeGiB":)" + std::to_string(o.root_gib) + "}" + o.extra_disks +
      R"(],"network":)" + o.network + R"(,"desiredPowerState":)" + quote(o.power);
  if (!o.domain_name.empty()) spec += R"(,"domainName":)" + quote(o.domain_name);
  if (!o.provider_id.empty()) spec += R"(,"providerID":)" + quote(o.provider_id);
  if (!o.user_data.empty()) spec += R"(,"userData":)" + quote(o.user_data);
  if (!o.resize_policy.empty()) spec += R"(,"resizePolicy":)" + quote(o.resize_policy);
  if (!o.restart_requested_at.empty()) {
    spec += R"(,"restartRequestedAt":)" + quote(o.restart_requested_at);
  }
  spec += "}";
  if (!o.status.empty()) spec += R"(,"status":)" + o.status;
  return R"({"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":"LibvirtMachine",
    "metadata":{"name":)" +
         quote(o.name) + R"(,"namespace":"default","uid":)" + quote(o.uid) +
         R"(,"generation":1,"annotations":)" + o.annotations + R"(},"spec":)" + spec + "}";
}

inline std::string machineRequest(const MachineOptions& o, const std::string& token = "") {
  std::string r = R"({"object":)" + machineObject(o);
  if (!token.empty()) r += R"(,"operation":{"token":)" + quote(token) + "}";
  return r + "}";
}

// A snapshot request (sdk/schemas/snapshot.request.json) on the machine `o`; `name` empty
// leaves out the snapshot object (list).
inline std::string snapshotRequest(const MachineOptions& o, const std::string& action,
                                   const std::string& name, const std::string& ref = "",
                                   bool memory = false) {
  std::string r =
      R"({"action":)" + quote(action) + R"(,"kind":"LibvirtMachine","machine":)" + machineObject(o);
  if (!name.empty()) {
    r += R"(,"snapshot":{"name":)" + quote(name) + R"(,"uid":"snap-uid","memory":)" +
         (memory ? "true" : "false") + R"(,"description":"taken by a test"})";
  }
  if (!ref.empty()) r += R"(,"snapshotRef":)" + quote(ref);
  return r + "}";
}

// One loaded plugin and (optionally) one instance.
class Harness {
 public:
  Harness() {
    handle_ = dlopen(pluginPath().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    auto init = reinterpret_cast<banlieue_provider_v1_init_fn>(
        dlsym(handle_, BANLIEUE_PROVIDER_V1_INIT_SYMBOL));
    if (init == nullptr) throw std::runtime_error("no init symbol");
    host_.clearRecords();
    client_ = host_.load(init);
  }
  ~Harness() { destroy(); }  // the library stays loaded, as the host never unloads plugins

  sdk::abi::CallOutcome create(const ProviderSpec& spec) {
    destroy();
    auto call = host_.call("prov-uid");
    return client_.instanceCreate(call, instanceConfig(spec), &instance_);
  }
  void destroy() {
    if (instance_ != nullptr) {
      auto call = host_.call("prov-uid");
      client_.instanceDestroy(instance_, call);
      instance_ = nullptr;
    }
  }

  sdk::abi::CallOutcome introspect(const ProviderSpec& spec) {
    auto call = host_.call("prov-uid");
    return client_.introspect(instance_, call, R"({"provider":)" + providerJson(spec) + "}");
  }
  sdk::abi::CallOutcome reconcile(const MachineOptions& o, const std::string& token = "") {
    auto call = host_.call(o.uid);
    return client_.reconcile(instance_, call, "LibvirtMachine", machineRequest(o, token));
  }
  sdk::abi::CallOutcome finalize(const MachineOptions& o) {
    auto call = host_.call(o.uid);
    return client_.finalize(instance_, call, "LibvirtMachine", machineRequest(o));
  }
  sdk::abi::CallOutcome importImage(const std::string& request, const std::string& uid) {
    auto call = host_.call(uid);
    return client_.importImage(instance_, call, request);
  }
  sdk::abi::CallOutcome deleteImage(const std::string& request, const std::string& uid) {
    auto call = host_.call(uid);
    return client_.deleteImage(instance_, call, request);
  }
  // The call's object uid is the machine's, as the host sends it.
  sdk::abi::CallOutcome snapshot(const MachineOptions& o, const std::string& request) {
    auto call = host_.call(o.uid);
    return client_.snapshot(instance_, call, request);
  }
  // The machine's serial console; on OK *out is open and goes through consoleClose.
  sdk::abi::CallOutcome openConsole(const MachineOptions& o, banlieue_console** out) {
    auto call = host_.call(o.uid);
    return client_.consoleOpen(
        instance_, call,
        R"({"kind":"LibvirtMachine","machine":)" + machineObject(o) + R"(,"console":"serial"})",
        out);
  }
  // The change feed (ABI 1.4), as the host's long poll calls it: the Provider's uid, `timeout`.
  sdk::abi::CallOutcome watchChanges(const std::string& cursor, std::chrono::milliseconds timeout) {
    auto call = host_.call("prov-uid", timeout);
    return client_.watchChanges(instance_, call, R"({"cursor":)" + quote(cursor) + "}");
  }
  // Polls import_image until it stops answering IN_PROGRESS (bounded).
  sdk::abi::CallOutcome importUntilDone(const std::string& request_without_token,
                                        const std::string& uid) {
    auto outcome = importImage(request_without_token + "}", uid);
    for (int i = 0; i < 600 && outcome.code == BANLIEUE_IN_PROGRESS; ++i) {
      auto body = json::parse(outcome.body, "reply");
      std::string token = json::stringOr(&body, "operation.token");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      outcome = importImage(
          request_without_token + R"(,"operation":{"token":)" + quote(token) + "}}", uid);
    }
    return outcome;
  }

  sdk::abi::ProviderClient& client() { return client_; }
  sdk::testing::FakeHost& host() { return host_; }
  banlieue_instance* instance() { return instance_; }

 private:
  void* handle_ = nullptr;
  sdk::testing::FakeHost& host_ = sdk::testing::FakeHost::shared();
  sdk::abi::ProviderClient client_;
  banlieue_instance* instance_ = nullptr;
};

inline std::string describeOutcome(const sdk::abi::CallOutcome& o) {
  return o.codeName() + " reason=" + o.reason + " message=" + o.message + " body=" + o.body;
}

}  // namespace banlieue::libvirt::testing
