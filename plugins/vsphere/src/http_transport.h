// The HTTP edge of the vSphere plugin: one keep-alive HTTPS connection to one vCenter.
// Callers (the SOAP client, datastore uploads) see only this interface; the one
// implementation (beast_transport.cc) is the only translation unit that includes Boost.Beast,
// and tests can substitute a scripted transport.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace banlieue::vsphere {

// https://host[:port][/path]: plain http is refused (it would carry the password in clear).
struct Url {
  std::string scheme;
  std::string host;
  std::string port;
  std::string path;  // starts with '/'; "/sdk" when the endpoint names none

  // Throws std::invalid_argument with a message naming what is wrong.
  static Url parse(const std::string& text);
  std::string origin() const { return scheme + "://" + host + ":" + port; }
};

struct TlsOptions {
  std::string ca_bundle_pem;  // trusted roots; empty = the system store
  bool insecure_skip_verify = false;
};

struct HttpRequest {
  std::string method = "POST";
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string body_file;  // when set, the body is streamed from this file instead
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  // Every value of a header (Set-Cookie may repeat).
  std::vector<std::string> all(const std::string& lower_name) const;
};

// A failure below HTTP: DNS, TCP, TLS, a timeout or a connection dropped mid-exchange.
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
  // Sends one request on the kept-alive connection (opening it when needed) and reads the
  // whole response, all within `timeout`. Throws TransportError.
  virtual HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) = 0;
  // Drops the connection; the next send opens a new one.
  virtual void reset() = 0;
};

std::unique_ptr<HttpTransport> makeBeastTransport(const Url& url, const TlsOptions& tls);

}  // namespace banlieue::vsphere
