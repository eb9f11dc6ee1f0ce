// The qemu example's plugin as a host drives it: the .so built against the SDK alone (its path
// in BANLIEUE_QEMU_PLUGIN, set by CTest), loaded with dlopen through the SDK's fake host, and
// a loop that feeds each operation token into the next call as the provider runtime does.
#pragma once

#include <banlieue/sdk/abi_client.h>
#include <banlieue/sdk/json.h>
#include <banlieue/sdk/testing/fake_host.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace banlieue::qemu::testing {

using sdk::abi::CallOutcome;

inline std::string pluginPath() {
  const char* path = std::getenv("BANLIEUE_QEMU_PLUGIN");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error("BANLIEUE_QEMU_PLUGIN names no plugin (run through ctest)");
  }
  return path;
}

inline const sdk::abi::ProviderClient& pluginClient() {
  static const sdk::abi::ProviderClient client = [] {
    void* handle = dlopen(pluginPath().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    auto init = reinterpret_cast<banlieue_provider_v1_init_fn>(
        dlsym(handle, BANLIEUE_PROVIDER_V1_INIT_SYMBOL));
    if (init == nullptr) throw std::runtime_error("no banlieue_provider_v1_init");
    return sdk::testing::FakeHost::shared().load(init);  // never dlclose'd, as by the host
  }();
  return client;
}

// One instance of the plugin, like one Provider's pod.
class Driver {
 public:
  Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;
  ~Driver() { destroy(); }

  CallOutcome create(const std::string& config) {
    destroy();
    auto call = host_.call({}, std::chrono::seconds(30));
    return client_.instanceCreate(call, config, &instance_);
  }
  void destroy() {
    if (instance_ == nullptr) return;
    auto call = host_.call({}, std::chrono::seconds(30));
    client_.instanceDestroy(instance_, call);
    instance_ = nullptr;
  }
  CallOutcome introspect() {
    auto call = host_.call({}, std::chrono::seconds(30));
    return client_.introspect(instance_, call, R"({"provider":{}})");
  }
  CallOutcome once(const std::string& slot, const std::string& object, const std::string& uid,
                   const std::string& token = {}) {
    std::string body = R"({"object":)" + object;
    if (!token.empty()) body += R"(,"operation":{"token":")" + token + R"("})";
    body += "}";
    auto call = host_.call(uid, std::chrono::seconds(30));
    if (slot == "finalize") return client_.finalize(instance_, call, "QemuMachine", body);
    return client_.reconcile(instance_, call, "QemuMachine", body);
  }
  // Calls until the answer is not IN_PROGRESS (at most `polls` calls, 100 ms apart), each
  // token fed into the next call; every answer is kept in `trail` when given.
  CallOutcome drive(const std::string& slot, const std::string& object, const std::string& uid,
                    std::vector<CallOutcome>* trail = nullptr, int polls = 300) {
    std::string token;
    CallOutcome outcome;
    for (int i = 0; i < polls; ++i) {
      outcome = once(slot, object, uid, token);
      if (trail != nullptr) trail->push_back(outcome);
      if (outcome.code != BANLIEUE_IN_PROGRESS) return outcome;
      auto reply = sdk::json::parse(outcome.body, "reply");
      token = sdk::json::stringOr(&reply, "operation.token");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return outcome;
  }

 private:
  sdk::testing::FakeHost& host_ = sdk::testing::FakeHost::shared();
  const sdk::abi::ProviderClient& client_ = pluginClient();
  banlieue_instance* instance_ = nullptr;
};

}  // namespace banlieue::qemu::testing
