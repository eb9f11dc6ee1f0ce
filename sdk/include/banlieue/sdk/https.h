// What the SDK's HTTPS client (banlieue/sdk/https_client.h) talks about: endpoints, TLS and
// proxy options, requests, responses and transport errors, without Boost.Beast, so a plugin's
// headers can name them and only one source file pays for the client.
// The policy (docs/adr/0029-one-https-client-for-plugins.md), one for the vSphere and Proxmox
// plugins and for third parties; nothing of it crosses the ABI:
//  - TLS 1.2 or later; the peer's certificate is verified, and its name against the endpoint's
//    host, against the configured CA bundle only (the system store only when none is given);
//    verification is off only when a Provider says insecureSkipTLSVerify.
//  - http:// endpoints are refused unless the plugin opts in for a test mode
//    (EndpointRules::allow_plain_http), with a message saying what would go in clear.
//  - HTTPS_PROXY / NO_PROXY (banlieue/sdk/proxy.h) are honoured: a proxied request tunnels its
//    TLS through CONNECT, so the proxy sees the host and port, never the content.
//  - Every step (resolve, connect, proxy tunnel, handshake, write, read) runs under the
//    request's deadline: a stalled server or proxy cannot hold a call past it.
#pragma once

#include <banlieue/sdk/proxy.h>
#include <banlieue/sdk/text.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace banlieue::sdk::https {

// What a plugin accepts as an endpoint.
struct EndpointRules {
  std::string default_port = "443";
  std::string default_path;  // used when the URL names no path, or only "/"
  // A plain http:// endpoint: refused unless a test mode asks for it.
  bool allow_plain_http = false;
  // Ends the refusal of http://, e.g. "would send the vCenter password in clear".
  std::string plain_http_refusal = "would send credentials in clear";
};

// scheme://host[:port][/path]. Credentials in the URL are refused (they belong in a Secret).
struct Endpoint {
  std::string scheme;  // "https", or "http" when the rules allow it
  std::string host;    // IPv6 without brackets
  std::string port;
  std::string path;  // starts with '/', or empty

  // Throws std::invalid_argument with a message naming what is wrong.
  static Endpoint parse(std::string_view url, const EndpointRules& rules = {}) {
    const std::string text(url);
    const auto scheme_end = text.find("://");
    if (scheme_end == std::string::npos) {
      throw std::invalid_argument("endpoint '" + text + "' has no scheme (want https://" + "host" +
                                  (rules.default_path.empty() ? "" : rules.default_path) + ")");
    }
    Endpoint e;
    e.scheme = asciiLower(text.substr(0, scheme_end));
    if (e.scheme == "http" && !rules.allow_plain_http) {
      throw std::invalid_argument("endpoint '" + text + "': plain http " +
                                  rules.plain_http_refusal + "; use https:// (with a caBundle)");
    }
    if (e.scheme != "https" && e.scheme != "http") {
      throw std::invalid_argument("endpoint '" + text + "': scheme must be https");
    }
    const std::string rest = text.substr(scheme_end + 3);
    const auto path_start = rest.find_first_of("/?#");
    const std::string authority = rest.substr(0, path_start);
    e.path = path_start == std::string::npos ? "" : rest.substr(path_start);
    if (const auto cut = e.path.find_first_of("?#"); cut != std::string::npos) {
      e.path = e.path.substr(0, cut);
    }
    if (e.path.empty() || e.path == "/") e.path = rules.default_path;
    if (authority.find('@') != std::string::npos) {
      throw std::invalid_argument("endpoint '" + text +
                                  "' must not carry credentials; use the Provider's "
                                  "credentialsRef");
    }
    if (!authority.empty() && authority.front() == '[' &&
        authority.find(']') == std::string::npos) {
      throw std::invalid_argument("endpoint '" + text + "': unterminated '['");
    }
    auto [host, port] = proxy_detail::splitHostPort(authority);
    if (host.empty()) throw std::invalid_argument("endpoint '" + text + "' names no host");
    if (port.empty()) port = e.scheme == "http" ? "80" : rules.default_port;
    if (!proxy_detail::allDigits(port) || port.size() > 5 || std::stoi(port) > 65535) {
      throw std::invalid_argument("endpoint '" + text + "' has an invalid port");
    }
    e.host = std::move(host);
    e.port = std::move(port);
    return e;
  }

  bool tls() const { return scheme == "https"; }
  // host:port as the Host header and a CONNECT request name it.
  std::string authority() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + port;
  }
  std::string origin() const { return scheme + "://" + authority(); }
};

struct TlsOptions {
  std::string ca_bundle_pem;  // the trusted roots; empty: the system store
  bool insecure_skip_verify = false;
};

struct Options {
  TlsOptions tls;
  // Unset: HTTPS_PROXY and NO_PROXY of the process (ProxySettings::fromEnvironment()).
  std::optional<ProxySettings> proxy;
  std::string user_agent = "banlieue-provider";
  uint64_t max_response_bytes = 64ull << 20;
};

struct Request {
  std::string method = "GET";
  std::string target;  // path and query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string body_file;  // when set, the body is streamed from this file instead
};

struct Response {
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  // Every value of a header (Set-Cookie may repeat).
  std::vector<std::string> all(std::string_view lower_name) const {
    std::vector<std::string> values;
    for (const auto& [name, value] : headers) {
      if (name == lower_name) values.push_back(value);
    }
    return values;
  }
};

// A failure below HTTP: DNS, TCP, the proxy, TLS, a timeout or a connection dropped
// mid-exchange. The message names the endpoint (and the proxy, when one was used).
class TransportError : public std::runtime_error {
 public:
  enum class Kind { kConnect, kProxy, kTls, kTimeout, kIo };
  TransportError(Kind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// The server answered an upgrade (WebSocket) with something other than 101 Switching
// Protocols: its answer, to be read like any response (status, reason phrase, body).
class UpgradeRefused : public std::runtime_error {
 public:
  explicit UpgradeRefused(Response response)
      : std::runtime_error("upgrade refused: " + std::to_string(response.status) + " " +
                           response.reason),
        response_(std::move(response)) {}
  const Response& response() const { return response_; }

 private:
  Response response_;
};

// An open websocket (RFC 6455) over the client's TLS and proxy policy, opened by
// banlieue/sdk/websocket_client.h. Messages go out binary, whole (never fragmented) and masked;
// what comes in is a byte stream (message boundaries are not kept); pings are answered, and
// the socket pings when idle. THREADS: one read and one write may run at once on two threads,
// each never twice at once; close() runs when neither does. The destructor closes.
class WebSocket {
 public:
  enum class ReadStatus { kData, kTimeout, kClosed };
  virtual ~WebSocket() = default;
  // Appends up to `max` received bytes to `out`, waiting at most `timeout` for the first.
  // kClosed once the peer closed or the connection failed and everything received was read;
  // endReason() says which.
  virtual ReadStatus read(std::string& out, size_t max, std::chrono::milliseconds timeout) = 0;
  // Sends `data` as one binary message within `timeout`. Throws TransportError: kTimeout (the
  // connection is then dropped), kIo once it has ended.
  virtual void write(std::string_view data, std::chrono::milliseconds timeout) = 0;
  // Sends a close frame, waits at most `timeout` for the peer's answer, then drops the
  // connection and joins the socket's thread. Idempotent.
  virtual void close(std::chrono::milliseconds timeout) = 0;
  // Why the socket ended (the peer's close frame and reason, end of stream, an error); empty
  // while it is open.
  virtual std::string endReason() const = 0;
};

}  // namespace banlieue::sdk::https
