// The plugin as the host drives it: dlopen of the real libbanlieue-provider-proxmox.so, the
// SDK's fake host, and a loop that feeds each operation token into the next call.
#pragma once

#include "tests/support/build_paths.h"
#include "tests/support/json_escape.h"

#include <banlieue/sdk/abi_client.h>
#include <banlieue/sdk/json.h>
#include <banlieue/sdk/testing/fake_host.h>
#include <dlfcn.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace banlieue::proxmox::testing {

using sdk::abi::CallOutcome;

inline banlieue_provider_v1_init_fn pluginInit() {
  static void* handle = dlopen(BANLIEUE_PROXMOX_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  auto init = reinterpret_cast<banlieue_provider_v1_init_fn>(
      dlsym(handle, BANLIEUE_PROVIDER_V1_INIT_SYMBOL));
  if (init == nullptr) throw std::runtime_error("no banlieue_provider_v1_init");
  return init;  // never dlclose: plugins are never unloaded (ABI rule)
}

inline const sdk::abi::ProviderClient& pluginClient() {
  static const sdk::abi::ProviderClient client =
      sdk::testing::FakeHost::shared().load(pluginInit());
  return client;
}

// One plugin instance of the process's plugin, like one Provider's pod.
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
    auto call = host_.call({}, std::chrono::seconds(10));
    client_.instanceDestroy(instance_, call);
    instance_ = nullptr;
  }
  CallOutcome introspect(const std::string& request = "{}") {
    auto call = host_.call({}, std::chrono::seconds(30));
    return client_.introspect(instance_, call, request);
  }
  CallOutcome once(const std::string& slot, const std::string& object,
                   const std::string& token = {}) {
    std::string body = R"({"object":)" + object;
    if (!token.empty()) body += R"(,"operation":{"token":")" + token + R"("})";
    body += "}";
    auto call = host_.call("uid", std::chrono::seconds(30));
    if (slot == "finalize") return client_.finalize(instance_, call, "ProxmoxMachine", body);
    return client_.reconcile(instance_, call, "ProxmoxMachine", body);
  }
  CallOutcome importOnce(const std::string& request) {
    auto call = host_.call("image-uid", std::chrono::seconds(30));
    return client_.importImage(instance_, call, request);
  }
  // delete_image until done, the token fed back in as the host does.
  CallOutcome deleteImage(const std::string& request, int polls = 600) {
    return untilDone(polls, [&](const std::string& token) {
      auto call = host_.call("image-uid", std::chrono::seconds(30));
      return client_.deleteImage(instance_, call, withToken(request, token));
    });
  }
  // import_image until done, the token fed back in as the host does.
  CallOutcome importImage(const std::string& request, int polls = 600) {
    return untilDone(
        polls, [&](const std::string& token) { return importOnce(withToken(request, token)); });
  }
  // One snapshot call. `machine_uid` is the call's object uid: the machine's, as the host
  // serialises snapshot calls with the machine's own.
  CallOutcome snapshotOnce(const std::string& request, const std::string& machine_uid = "uid") {
    auto call = host_.call(machine_uid, std::chrono::seconds(30));
    return client_.snapshot(instance_, call, request);
  }
  // snapshot until done, the token fed back in as the host does.
  CallOutcome snapshot(const std::string& request, const std::string& machine_uid = "uid",
                       int polls = 300) {
    return untilDone(polls, [&](const std::string& token) {
      return snapshotOnce(withToken(request, token), machine_uid);
    });
  }
  // console_open (ABI 1.3) of `machine` (the ProxmoxMachine object), as the host's console
  // server calls it; on OK *console is the open console, for consoleClose.
  CallOutcome consoleOpen(const std::string& machine, banlieue_console** console,
                          std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    const std::string request =
        R"({"kind":"ProxmoxMachine","console":"serial","machine":)" + machine + "}";
    auto call = host_.call("uid", deadline);
    return client_.consoleOpen(instance_, call, request, console);
  }
  banlieue_status consoleRead(banlieue_console* console, std::string& out,
                              std::chrono::milliseconds timeout) {
    char buf[4096];
    size_t n = 0;
    const banlieue_status status =
        client_.consoleRead(console, buf, sizeof buf, static_cast<int32_t>(timeout.count()), &n);
    out.append(buf, n);
    return status;
  }
  banlieue_status consoleWrite(banlieue_console* console, std::string_view data, size_t& n) {
    return client_.consoleWrite(console, data, &n);
  }
  void consoleClose(banlieue_console* console) { client_.consoleClose(console); }
  // watch_changes (ABI 1.4), as the host's change feed calls it: for the Provider (its uid is
  // the call's object), with `timeout` as the long poll's deadline.
  CallOutcome watchChanges(const std::string& cursor, std::chrono::milliseconds timeout) {
    auto call = host_.call("provider-uid", timeout);
    return client_.watchChanges(instance_, call,
                                R"({"cursor":")" + banlieue::testing::jsonEscape(cursor) + R"("})");
  }
  // Calls until the answer is not IN_PROGRESS, feeding each token into the next call, as the
  // host does.
  CallOutcome drive(const std::string& slot, const std::string& object, int polls = 300) {
    return untilDone(polls, [&](const std::string& token) { return once(slot, object, token); });
  }
  // A request body (a JSON object) with the operation token of the previous reply, if any.
  static std::string withToken(const std::string& request, const std::string& token) {
    if (token.empty()) return request;
    return request.substr(0, request.size() - 1) + R"(,"operation":{"token":")" + token + "\"}}";
  }

 private:
  // The host's loop: `call(token)` with no token first, then with each IN_PROGRESS reply's
  // token, until an answer is not IN_PROGRESS (or `polls` calls were made).
  template <class Call>
  static CallOutcome untilDone(int polls, Call&& call) {
    std::string token;
    CallOutcome outcome;
    for (int i = 0; i < polls; ++i) {
      outcome = call(token);
      if (outcome.code != BANLIEUE_IN_PROGRESS) return outcome;
      auto reply = sdk::json::parse(outcome.body, "reply");
      token = sdk::json::stringOr(&reply, "operation.token");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return outcome;
  }

  sdk::testing::FakeHost& host_ = sdk::testing::FakeHost::shared();
  const sdk::abi::ProviderClient& client_ = pluginClient();
  banlieue_instance* instance_ = nullptr;
};

inline std::string machine(const std::string& name, const std::string& uid,
                           const std::string& extra, const std::string& power = "PoweredOn",
                           const std::string& node = "pve1") {
  return R"({"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":"ProxmoxMachine",)"
         R"("metadata":{"name":")" +
         name + R"(","namespace":"default","uid":")" + uid +
         R"(","generation":1},"spec":{"node":")" + node + R"(","failureDomain":")" + node +
         R"(","templateVmid":)" + (node == "pve2" ? "9001" : "9000") +
         R"(,"storage":"local-lvm","cores":2,"memoryMiB":2048,"seedIsoStorage":"local",)"
         R"("desiredPowerState":")" +
         power + R"(")" + extra + "}}";
}

}  // namespace banlieue::proxmox::testing
