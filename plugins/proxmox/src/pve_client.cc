#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/uri.h>

#include <algorithm>

namespace banlieue::proxmox {
namespace {

namespace json = sdk::json;
using sdk::Code;

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

std::chrono::milliseconds timeLeft(Deadline deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                  std::chrono::steady_clock::now());
  return std::max(ms, std::chrono::milliseconds(1));
}

void wipeSecret(std::string& s) {
  volatile char* p = s.data();
  for (size_t i = 0; i < s.size(); ++i) p[i] = 0;
}

bool PveError::isLockTimeout() const {
  return http_status_ == 500 && contains(message_, "lock") && contains(message_, "timeout");
}

bool PveError::isVmidTaken() const {
  return contains(message_, "already exists");
}

bool PveError::isMissing() const {
  return http_status_ == 404 || (http_status_ == 500 && (contains(message_, "does not exist") ||
                                                         contains(message_, "no such task")));
}

sdk::Status PveError::toStatus(const std::string& context) const {
  const std::string text =
      context + ": PVE answered " + std::to_string(http_status_) + " " + message_;
  if (http_status_ == 401) {
    return {Code::kUnauthenticated, "AuthenticationFailed",
            text + " (check the API token or password in the Provider's credentials Secret)"};
  }
  if (http_status_ == 403) return {Code::kPermissionDenied, "PermissionDenied", text};
  if (http_status_ == 400) return {Code::kInvalidArgument, "InvalidParameter", text};
  if (http_status_ == 595 || http_status_ == 596) {
    return {Code::kUnavailable, "NodeUnreachable", text};
  }
  if (http_status_ == 501) return {Code::kUnimplemented, "Unsupported", text};
  if (isLockTimeout()) return {Code::kUnavailable, "StorageLocked", text};
  if (isVmidTaken()) return {Code::kAlreadyExists, "VmidTaken", text};
  if (isMissing()) return {Code::kNotFound, "NotFound", text};
  return {Code::kUnavailable, "BackendError", text};
}

PveCredentials::~PveCredentials() {
  wipeSecret(token);
  wipeSecret(password);
}

PveClient::PveClient(std::unique_ptr<HttpTransport> transport, Endpoint endpoint,
                     PveCredentials credentials)
    : transport_(std::move(transport)),
      endpoint_(std::move(endpoint)),
      credentials_(std::move(credentials)) {}

PveClient::~PveClient() {
  std::lock_guard lock(ticket_mutex_);
  if (ticket_) {
    wipeSecret(ticket_->cookie);
    wipeSecret(ticket_->csrf);
  }
}

PveClient::Ticket PveClient::ticket(Deadline deadline, bool force_renewal) const {
  std::lock_guard lock(ticket_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (ticket_ && !force_renewal && now - ticket_->issued < kTicketRenewAfter) return *ticket_;
  // One login at a time: concurrent callers wait for it and share the new ticket.
  HttpRequest login;
  login.method = "POST";
  login.target = "/api2/json/access/ticket";
  login.headers.emplace_back("Accept", "application/json");
  login.body =
      encodeForm({{"username", credentials_.username}, {"password", credentials_.password}});
  rapidjson::Document data = send(login, deadline);
  wipeSecret(login.body);
  Ticket fresh{json::stringOr(&data, "ticket"), json::stringOr(&data, "CSRFPreventionToken"), now};
  if (fresh.cookie.empty() || fresh.csrf.empty()) {
    throw PveError(502, "POST /access/ticket: the answer has no ticket or CSRFPreventionToken");
  }
  ticket_ = fresh;
  return fresh;
}

rapidjson::Document PveClient::call(const std::string& method, const std::string& path,
                                    const std::string& body, Deadline deadline) const {
  HttpRequest request;
  request.method = method;
  request.target = "/api2/json" + path;
  request.headers.emplace_back("Accept", "application/json");
  request.body = body;
  if (!credentials_.token.empty()) {
    request.headers.emplace_back("Authorization", "PVEAPIToken=" + credentials_.token);
    return send(request, deadline);
  }
  for (int attempt = 0;; ++attempt) {
    Ticket t = ticket(deadline, attempt > 0);
    HttpRequest signed_request = request;
    signed_request.headers.emplace_back("Cookie", "PVEAuthCookie=" + sdk::percentEncode(t.cookie));
    if (method != "GET") signed_request.headers.emplace_back("CSRFPreventionToken", t.csrf);
    try {
      return send(signed_request, deadline);
    } catch (const PveError& e) {
      // A ticket PVE no longer honours (expired early, keys rotated): log in again, once.
      if (e.httpStatus() != 401 || attempt > 0) throw;
    }
  }
}

rapidjson::Document PveClient::send(const HttpRequest& request, Deadline deadline) const {
  const std::string what = request.method + " " + request.target.substr(10);
  HttpResponse response = transport_->send(request, timeLeft(deadline));
  if (response.status < 200 || response.status >= 300) {
    std::string message = response.reason;
    // A 400 names each bad parameter in "errors"; fold them into the message.
    rapidjson::Document doc;
    if (!json::nestsDeeperThan(response.body))
      doc.Parse(response.body.data(), response.body.size());
    if (!doc.HasParseError() && doc.IsObject()) {
      if (const auto* errors = json::member(&doc, "errors"); errors && errors->IsObject()) {
        for (const auto& m : errors->GetObject()) {
          message += std::string("; ") + m.name.GetString() + ": " + asString(&m.value);
        }
      }
    }
    if (message.empty()) message = "HTTP " + std::to_string(response.status);
    throw PveError(response.status, what + ": " + message);
  }
  rapidjson::Document doc;
  if (!json::nestsDeeperThan(response.body)) doc.Parse(response.body.data(), response.body.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("data")) {
    throw PveError(502, what + ": the answer is not a {\"data\": ...} envelope");
  }
  rapidjson::Document data;
  data.CopyFrom(doc["data"], data.GetAllocator());
  // The analyzer loses track of the Document's own allocator across the move.
  return data;  // NOLINT(clang-analyzer-cplusplus.NewDeleteLeaks)
}

std::unique_ptr<WebSocket> PveClient::openWebSocket(const std::string& path, const Form& query,
                                                    Deadline deadline) const {
  HttpRequest request;
  // The target carries the console ticket and a header the credentials: both are overwritten
  // once the upgrade is done, whichever way it went.
  struct Scrub {
    HttpRequest& request;
    ~Scrub() {
      wipeSecret(request.target);
      for (auto& header : request.headers) wipeSecret(header.second);
    }
  } scrub{request};
  request.target = "/api2/json" + path + "?" + encodeForm(query);
  // PVE's xterm.js and noVNC ask for "binary"; older PVE refuses an upgrade without it.
  request.headers.emplace_back("Sec-WebSocket-Protocol", "binary");
  if (!credentials_.token.empty()) {
    request.headers.emplace_back("Authorization", "PVEAPIToken=" + credentials_.token);
  } else {
    Ticket t = ticket(deadline, false);
    request.headers.emplace_back("Cookie", "PVEAuthCookie=" + sdk::percentEncode(t.cookie));
    wipeSecret(t.cookie);
    wipeSecret(t.csrf);
  }
  try {
    return transport_->openWebSocket(request, timeLeft(deadline));
  } catch (const UpgradeRefused& refused) {
    std::string message = refused.response().reason;
    if (message.empty()) message = "HTTP " + std::to_string(refused.response().status);
    throw PveError(refused.response().status, "GET " + path + ": " + message);
  }
}

rapidjson::Document PveClient::get(const std::string& path, Deadline deadline) const {
  return call("GET", path, {}, deadline);
}
rapidjson::Document PveClient::post(const std::string& path, const Form& form,
                                    Deadline deadline) const {
  return call("POST", path, encodeForm(form), deadline);
}
rapidjson::Document PveClient::put(const std::string& path, const Form& form,
                                   Deadline deadline) const {
  return call("PUT", path, encodeForm(form), deadline);
}
rapidjson::Document PveClient::del(const std::string& path, Deadline deadline) const {
  return call("DELETE", path, {}, deadline);
}

TaskStatus PveClient::task(const std::string& node, const std::string& upid,
                           Deadline deadline) const {
  rapidjson::Document data =
      get("/nodes/" + sdk::pathSegment(node) + "/tasks/" + sdk::pathSegment(upid) + "/status",
          deadline);
  TaskStatus status;
  status.running = json::stringOr(&data, "status") == "running";
  status.exit_status = asString(json::member(&data, "exitstatus"));
  return status;
}

std::string encodeForm(const Form& form) {
  std::string out;
  for (const auto& [key, value] : form) {
    if (!out.empty()) out += '&';
    out += sdk::percentEncode(key) + "=" + sdk::percentEncode(value);
  }
  return out;
}

std::string upidNode(const std::string& upid) {
  if (upid.rfind("UPID:", 0) != 0) return {};
  auto end = upid.find(':', 5);
  if (end == std::string::npos) return {};
  return upid.substr(5, end - 5);
}

int64_t asInt(const rapidjson::Value* value, int64_t fallback) {
  if (value == nullptr) return fallback;
  if (value->IsInt64()) return value->GetInt64();
  if (value->IsNumber()) {
    // Converting a double outside int64's range is undefined behaviour: such a number is no
    // VMID, size or count this plugin can use.
    double d = value->GetDouble();
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return fallback;
    return static_cast<int64_t>(d);
  }
  if (value->IsString()) {
    try {
      return std::stoll(value->GetString());
    } catch (const std::exception&) {
      return fallback;
    }
  }
  return fallback;
}

std::string asString(const rapidjson::Value* value) {
  if (value == nullptr || value->IsNull()) return {};
  if (value->IsString()) return {value->GetString(), value->GetStringLength()};
  return json::serialize(*value);
}

}  // namespace banlieue::proxmox
