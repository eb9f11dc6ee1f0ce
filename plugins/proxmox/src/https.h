// The HTTPS edge of the Proxmox plugin, over the SDK's HTTPS client (banlieue/sdk/https.h: the
// TLS and proxy policy every plugin shares). The PVE client sees only HttpTransport, so tests
// could script it; https.cc is the only file that includes Boost.Beast (and its websocket).
#pragma once

#include <banlieue/sdk/https.h>

#include <chrono>
#include <memory>
#include <string>

namespace banlieue::proxmox {

using TlsOptions = sdk::https::TlsOptions;
using HttpRequest = sdk::https::Request;    // a non-empty body is sent form-encoded
using HttpResponse = sdk::https::Response;  // PVE puts its error message in the reason phrase
// A failure below HTTP: DNS, TCP, the proxy, TLS, a timeout or a dropped connection.
using TransportError = sdk::https::TransportError;
// The console's websocket (vncwebsocket), and the non-101 answer that refuses one.
using WebSocket = sdk::https::WebSocket;
using UpgradeRefused = sdk::https::UpgradeRefused;

// https://host[:port]; PVE's API listens on 8006 by default. A path is ignored.
struct Endpoint : sdk::https::Endpoint {
  // Throws std::invalid_argument naming what is wrong (not https, userinfo, no host, ...).
  static Endpoint parse(const std::string& url);
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One request and its whole response within `timeout`. Safe to call from several threads
  // at once (the host may reconcile many ProxmoxMachines of one Provider concurrently).
  virtual HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) = 0;
  // A websocket: GET request.target with its headers, upgraded, within `timeout`. Throws
  // TransportError or UpgradeRefused. A transport without websockets (a test's script) throws
  // TransportError.
  virtual std::unique_ptr<WebSocket> openWebSocket(const HttpRequest& request,
                                                   std::chrono::milliseconds /*timeout*/) {
    throw TransportError(TransportError::Kind::kConnect, "this transport opens no websocket (" +
                                                             request.target.substr(0, 40) + "...)");
  }
};

// Each request on a connection of its own (ADR 0009), through `proxy`'s proxy unless its
// NO_PROXY names the node (the plugin passes the pod's HTTPS_PROXY and NO_PROXY). Throws
// std::invalid_argument when the CA bundle is not PEM.
std::unique_ptr<HttpTransport> makeHttpsTransport(
    const Endpoint& endpoint, const TlsOptions& tls,
    const sdk::https::ProxySettings& proxy = sdk::https::ProxySettings());

}  // namespace banlieue::proxmox
