// The HTTPS edge of the Proxmox plugin. The PVE client sees only HttpTransport, so tests could
// script it; the one implementation (https.cc) is the only file that includes Boost.Beast.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace banlieue::proxmox {

// https://host[:port]; PVE's API listens on 8006 by default.
struct Endpoint {
  std::string host;
  std::string port;

  // Throws std::invalid_argument naming what is wrong (not https, userinfo, no host, ...).
  static Endpoint parse(const std::string& url);
  std::string origin() const { return "https://" + host + ":" + port; }
};

struct TlsOptions {
  std::string ca_bundle_pem;  // trusted roots; empty = the system store
  bool insecure_skip_verify = false;
};

struct HttpRequest {
  std::string method;
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // form-encoded when not empty
};

struct HttpResponse {
  int status = 0;
  std::string reason;  // PVE puts its error message in the reason phrase
  std::string body;
};

// A failure below HTTP: DNS, TCP, TLS, a timeout or a dropped connection.
class TransportError : public std::runtime_error {
 public:
  enum class Kind { kConnect, kTls, kTimeout, kIo };
  TransportError(Kind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One request and its whole response within `timeout`. Safe to call from several threads
  // at once (the host may reconcile many ProxmoxMachines of one Provider concurrently).
  virtual HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) = 0;
};

// Throws std::invalid_argument when the CA bundle is not PEM.
std::unique_ptr<HttpTransport> makeHttpsTransport(const Endpoint& endpoint, const TlsOptions& tls);

}  // namespace banlieue::proxmox
