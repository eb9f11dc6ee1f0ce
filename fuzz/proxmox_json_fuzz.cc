// Proxmox VE API answers as the Proxmox plugin reads them: the {"data": ...} envelope and error
// bodies (PveClient), node, storage and bridge listings (introspection) and task status. The
// input is a script of answers separated by "\n---\n", each optionally opened by a status line
// "HTTP <code> <reason>\n"; the n-th request gets the n-th answer (cycling). Any answers must
// give a result, a PveError or an sdk::Error, never a crash or another exception.
#include "plugins/proxmox/src/inventory.h"
#include "plugins/proxmox/src/pve_client.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace banlieue::proxmox;

class ScriptedTransport final : public HttpTransport {
 public:
  explicit ScriptedTransport(std::string_view script) {
    constexpr std::string_view kSeparator = "\n---\n";
    for (size_t at = 0;;) {
      size_t end = script.find(kSeparator, at);
      answers_.push_back(parse(script.substr(at, end == std::string_view::npos ? end : end - at)));
      if (end == std::string_view::npos) break;
      at = end + kSeparator.size();
    }
  }

  HttpResponse send(const HttpRequest&, std::chrono::milliseconds) override {
    return answers_[next_++ % answers_.size()];
  }

 private:
  static HttpResponse parse(std::string_view text) {
    HttpResponse response{.status = 200, .reason = "OK", .body = std::string(text)};
    if (text.substr(0, 5) == "HTTP ") {
      size_t eol = text.find('\n');
      std::string_view line = text.substr(5, eol == std::string_view::npos ? eol : eol - 5);
      int code = 0;
      size_t i = 0;
      for (; i < line.size() && i < 3 && line[i] >= '0' && line[i] <= '9'; ++i) {
        code = code * 10 + (line[i] - '0');
      }
      response.status = code;
      response.reason = std::string(line.substr(std::min(i + 1, line.size())));
      response.body = eol == std::string_view::npos ? "" : std::string(text.substr(eol + 1));
    }
    return response;
  }

  std::vector<HttpResponse> answers_;
  size_t next_ = 0;
};

const char* const kProvider = R"({
  "metadata": {"name": "pve"},
  "spec": {"capabilities": {
    "storageClasses": [{"name": "fast", "target": {"storage": "local-lvm"}}],
    "networkClasses": [{"name": "lan", "target": {"bridge": "vmbr0", "vlan": 10}}]}}})";

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view script(reinterpret_cast<const char*>(data), size);
  PveCredentials credentials;
  credentials.token = "banlieue@pve!fuzz=00000000-0000-0000-0000-000000000000";
  PveClient client(std::make_unique<ScriptedTransport>(script), Endpoint{"pve.test", "8006"},
                   std::move(credentials));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  static const rapidjson::Document provider = [] {
    rapidjson::Document doc;
    doc.Parse(kProvider);
    return doc;
  }();
  try {
    Introspection found = introspectCluster(client, ProviderSpec::parse(&provider), deadline);
    (void)found;
  } catch (const PveError& e) {
    (void)e.toStatus("introspect");
    (void)e.isLockTimeout();
    (void)e.isVmidTaken();
    (void)e.isMissing();
  } catch (const banlieue::sdk::Error&) {
  }
  try {
    TaskStatus task =
        client.task("pve1", "UPID:pve1:0001:0002:0003:qmclone:100:root@pam:", deadline);
    (void)task.ok();
    rapidjson::Document answer = client.get("/cluster/nextid", deadline);
    (void)asInt(&answer);
    (void)asString(&answer);
    (void)upidNode(asString(&answer));
  } catch (const PveError& e) {
    (void)e.toStatus("task");
  } catch (const banlieue::sdk::Error&) {
  }
  return 0;
}
