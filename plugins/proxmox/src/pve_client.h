// A Proxmox VE REST client (api2/json) with API-token or ticket auth. Every answer is unwrapped
// from its
// {"data": ...} envelope; a non-2xx answer becomes a PveError carrying PVE's own message (the
// HTTP reason phrase) and the per-parameter "errors" map, classified for the ABI.
#pragma once

#include "plugins/proxmox/src/https.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/status.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace banlieue::proxmox {

using Deadline = std::chrono::steady_clock::time_point;

// Time left until `deadline`, at least 1 ms (a call's timeout never reaches zero).
std::chrono::milliseconds timeLeft(Deadline deadline);
// Overwrites a secret (a token, a ticket) before its memory is released.
void wipeSecret(std::string& s);
using Form = std::vector<std::pair<std::string, std::string>>;

class PveError : public std::runtime_error {
 public:
  PveError(int http_status, std::string message)
      : std::runtime_error(message), http_status_(http_status), message_(std::move(message)) {}
  int httpStatus() const { return http_status_; }
  const std::string& message() const { return message_; }
  // A cluster-filesystem or config lock that timed out: retry later, nothing is wrong.
  bool isLockTimeout() const;
  // The VMID of a clone or create is taken (a race with another client's nextid).
  bool isVmidTaken() const;
  bool isMissing() const;  // the guest or task named does not exist
  sdk::Status toStatus(const std::string& context) const;

 private:
  int http_status_;
  std::string message_;
};

// What /nodes/{node}/tasks/{upid}/status says.
struct TaskStatus {
  bool running = false;
  std::string exit_status;  // "OK" on success, PVE's error text otherwise
  bool ok() const { return !running && exit_status == "OK"; }
};

// How the client proves who it is. Exactly one of token / password is set; both are zeroed
// when the client goes and never logged.
struct PveCredentials {
  std::string token;     // API token: "user@realm!tokenid=secret"
  std::string username;  // ticket auth: "user@realm"
  std::string password;
  PveCredentials() = default;
  PveCredentials(PveCredentials&&) = default;
  PveCredentials& operator=(PveCredentials&&) = default;
  ~PveCredentials();
};

// PVE tickets are valid for two hours; a new one is fetched well before that.
constexpr std::chrono::minutes kTicketRenewAfter{90};

class PveClient {
 public:
  PveClient(std::unique_ptr<HttpTransport> transport, Endpoint endpoint,
            PveCredentials credentials);
  ~PveClient();
  PveClient(const PveClient&) = delete;
  PveClient& operator=(const PveClient&) = delete;

  // The "data" member of the answer. Throw PveError or TransportError.
  rapidjson::Document get(const std::string& path, Deadline deadline) const;
  rapidjson::Document post(const std::string& path, const Form& form, Deadline deadline) const;
  rapidjson::Document put(const std::string& path, const Form& form, Deadline deadline) const;
  rapidjson::Document del(const std::string& path, Deadline deadline) const;

  // A websocket to `path` (e.g. /nodes/{node}/qemu/{vmid}/vncwebsocket) with `query`, under
  // this client's auth and PVE's "binary" subprotocol. PVE's refusal (a non-101 answer) is a
  // PveError like any other; neither names the query (it carries a ticket).
  std::unique_ptr<WebSocket> openWebSocket(const std::string& path, const Form& query,
                                           Deadline deadline) const;

  TaskStatus task(const std::string& node, const std::string& upid, Deadline deadline) const;
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  struct Ticket {
    std::string cookie;  // PVEAuthCookie
    std::string csrf;    // CSRFPreventionToken, sent on writes
    std::chrono::steady_clock::time_point issued;
  };
  rapidjson::Document call(const std::string& method, const std::string& path,
                           const std::string& body, Deadline deadline) const;
  rapidjson::Document send(const HttpRequest& request, Deadline deadline) const;
  // The current ticket, logging in first when there is none or it is due for renewal.
  Ticket ticket(Deadline deadline, bool force_renewal) const;

  std::unique_ptr<HttpTransport> transport_;
  Endpoint endpoint_;
  PveCredentials credentials_;
  mutable std::mutex ticket_mutex_;
  mutable std::optional<Ticket> ticket_;  // guarded by ticket_mutex_
};

std::string encodeForm(const Form& form);
// The node a UPID ran on ("UPID:<node>:..."), empty when `upid` is not one.
std::string upidNode(const std::string& upid);
// PVE answers numbers as JSON numbers or as strings depending on the endpoint and version.
int64_t asInt(const rapidjson::Value* value, int64_t fallback = 0);
std::string asString(const rapidjson::Value* value);

}  // namespace banlieue::proxmox
