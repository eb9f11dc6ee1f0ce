// PVE HTTP API requests of the Proxmox plugin against the project's fake PVE API
// (tests/proxmox/fake_pve.py, which logs every API request it serves): per instance create,
// per introspection (two online nodes, one offline), per ProxmoxMachine create (reconcile
// driven to Ready), per reconcile of the Ready machine (a resync) and per delete (finalize
// driven to done). The real plugin is loaded and driven through the C ABI as its tests do
// (tests/proxmox/plugin_driver.h), each operation token fed into the next call, and the calls
// are paced as the host paces them: after IN_PROGRESS, the reply's requeue hint clamped by the
// host's own rule, so every task status poll the host would make is counted. Prints one JSON
// object: requests in total and by method and path pattern, and the plugin calls each took.
//   build/<preset>/bench/proxmox_api_bench
#include "host/plugin/status_policy.h"
#include "tests/proxmox/fake_pve.h"
#include "tests/proxmox/plugin_driver.h"
#include "tests/proxmox/proxmox_fixture.h"

#include <banlieue/sdk/json.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using banlieue::proxmox::testing::Driver;
using banlieue::proxmox::testing::FakePve;
using banlieue::proxmox::testing::jsonEscape;
using banlieue::proxmox::testing::kCapabilities;
using banlieue::proxmox::testing::machine;
using banlieue::proxmox::testing::provisioned;
using banlieue::sdk::abi::CallOutcome;
namespace json = banlieue::sdk::json;

// "GET /nodes/pve1/qemu/100/status/current" -> "GET /nodes/{node}/qemu/{vmid}/status/current".
// The fake logs the path without its query ("GET /cluster/resources", not "?type=vm").
std::string pattern(const std::string& request) {
  const auto space = request.find(' ');
  std::string out = request.substr(0, space);
  std::vector<std::string> segments;
  std::string segment;
  for (char c : request.substr(space + 1) + "/") {
    if (c != '/') {
      segment += c;
    } else if (!segment.empty()) {
      segments.push_back(segment);
      segment.clear();
    }
  }
  out += ' ';
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string parent = i == 0 ? "" : segments[i - 1];
    std::string shown = segments[i];
    if (parent == "nodes") {
      shown = "{node}";
    } else if (parent == "qemu" && shown.find_first_not_of("0123456789") == std::string::npos) {
      shown = "{vmid}";
    } else if (parent == "tasks") {
      shown = "{upid}";
    } else if (parent == "snapshot") {
      shown = "{snapname}";
    } else if (parent == "storage" && i == 1) {
      shown = "{storage}";
    }
    out += "/" + shown;
  }
  return out;
}

struct Figures {
  std::map<std::string, int> by_pattern;
  int requests = 0;
  int task_polls = 0;
  int plugin_calls = 0;
  std::string reason;  // the final answer's reason when it was not OK
  std::string reply;   // the final answer's body
};

// The API requests the fake served since the last mark(), by pattern.
class RequestLog {
 public:
  explicit RequestLog(const FakePve& fake) : fake_(fake) { mark(); }
  void mark() { from_ = fake_.state()["requests"].GetUint(); }
  Figures since() const {
    rapidjson::Document state = fake_.state();
    const auto& log = state["requestLog"];
    Figures f;
    for (rapidjson::SizeType i = static_cast<rapidjson::SizeType>(from_); i < log.Size(); ++i) {
      const std::string p = pattern(log[i].GetString());
      ++f.by_pattern[p];
      ++f.requests;
      if (p == "GET /nodes/{node}/tasks/{upid}/status") ++f.task_polls;
    }
    return f;
  }

 private:
  const FakePve& fake_;
  size_t from_ = 0;
};

// reconcile or finalize until the answer is not IN_PROGRESS, as the host calls them.
Figures drive(Driver& driver, RequestLog& log, const std::string& slot, const std::string& object) {
  log.mark();
  std::string token;
  CallOutcome outcome;
  int calls = 0;
  while (true) {
    outcome = driver.once(slot, object, token);
    ++calls;
    if (outcome.code != BANLIEUE_IN_PROGRESS || calls == 600) break;
    auto reply = json::parse(outcome.body, "reply");
    token = json::stringOr(&reply, "operation.token");
    std::this_thread::sleep_for(banlieue::plugin::clampRequeueHint(
        outcome.requeue_after_ms, banlieue::plugin::kDefaultPollInterval));
  }
  Figures f = log.since();
  f.plugin_calls = calls;
  f.reply = outcome.body;
  if (!outcome.ok()) {
    std::fprintf(stderr, "bench: %s %s: %s\n", slot.c_str(), outcome.reason.c_str(),
                 outcome.message.c_str());
    f.reason = outcome.reason.empty() ? outcome.codeName() : outcome.reason;
  }
  return f;
}

std::string toJson(const Figures& f) {
  std::string out = "{\"pveRequests\":" + std::to_string(f.requests) +
                    ",\"taskStatusPolls\":" + std::to_string(f.task_polls) +
                    ",\"pluginCalls\":" + std::to_string(f.plugin_calls);
  if (!f.reason.empty()) out += ",\"failed\":\"" + jsonEscape(f.reason) + "\"";
  out += ",\"byRequest\":{";
  bool first = true;
  for (const auto& [p, n] : f.by_pattern) {
    out += (first ? "\"" : ",\"") + jsonEscape(p) + "\":" + std::to_string(n);
    first = false;
  }
  return out + "}}";
}

}  // namespace

int main() {
  FakePve fake;
  RequestLog log(fake);
  Driver driver;
  CallOutcome created = driver.create(fake.instanceConfig(FakePve::kSecret, kCapabilities));
  if (!created.ok()) {
    std::fprintf(stderr, "bench: instance_create: %s: %s\n", created.reason.c_str(),
                 created.message.c_str());
    return 1;
  }
  Figures instance = log.since();
  instance.plugin_calls = 1;

  log.mark();
  CallOutcome introspected = driver.introspect();
  Figures introspection = log.since();
  introspection.plugin_calls = 1;
  size_t failure_domains = 0;
  if (introspected.ok()) {
    failure_domains = json::parse(introspected.body, "introspect")["failureDomains"].Size();
  } else {
    introspection.reason = introspected.reason;
  }

  // The fixture's machine: 2 cores, 2048 MiB, cloned from template 9000 onto pve1's local-lvm,
  // one NIC on a class bridge, PoweredOn; no userData (that needs SSH to the node).
  const std::string object =
      machine("bench-vm", "5e5e5e5e-0000-4000-8000-000000000001",
              R"(,"network":[{"name":"eth0","bridge":"vmbr1","vlan":20,"model":"virtio"}])");
  Figures create = drive(driver, log, "reconcile", object);
  int64_t vmid = 0;
  if (create.reason.empty()) {
    auto reply = json::parse(create.reply, "reply");
    vmid = json::integer(&reply, "status.vmid").value_or(0);
  }
  Figures resync = drive(driver, log, "reconcile", provisioned(object, static_cast<int>(vmid)));
  Figures remove = drive(driver, log, "finalize", provisioned(object, static_cast<int>(vmid)));
  const int left = fake.guestCount();

  std::printf(
      "{\"instanceCreate\":%s,\"introspect\":%s,\"failureDomains\":%zu,"
      "\"vmCreate\":%s,\"vmResync\":%s,\"vmDelete\":%s,\"guestsLeft\":%d}\n",
      toJson(instance).c_str(), toJson(introspection).c_str(), failure_domains,
      toJson(create).c_str(), toJson(resync).c_str(), toJson(remove).c_str(), left);
  const bool all_ok = instance.reason.empty() && introspection.reason.empty() &&
                      create.reason.empty() && resync.reason.empty() && remove.reason.empty();
  return all_ok && left == 0 ? 0 : 1;
}
