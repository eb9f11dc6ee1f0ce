// The HTTP edge of the vSphere plugin: one keep-alive HTTPS connection to one vCenter, over
// the SDK's HTTPS client (banlieue/sdk/https.h: the TLS and proxy policy every plugin shares).
// Callers (the SOAP client, datastore uploads) see only this interface, so tests can
// substitute a scripted transport.
#pragma once

#include <banlieue/sdk/https.h>

#include <chrono>
#include <memory>
#include <string>

namespace banlieue::vsphere {

using TlsOptions = sdk::https::TlsOptions;
using HttpRequest = sdk::https::Request;
using HttpResponse = sdk::https::Response;
// A failure below HTTP: DNS, TCP, the proxy, TLS, a timeout or a connection dropped.
using TransportError = sdk::https::TransportError;

// https://host[:port][/path], "/sdk" when it names no path; plain http is refused (it would
// carry the vCenter password in clear).
struct Url : sdk::https::Endpoint {
  // Throws std::invalid_argument with a message naming what is wrong.
  static Url parse(const std::string& text);
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

// Through `proxy`'s proxy unless its NO_PROXY names the vCenter (the plugin passes the pod's
// HTTPS_PROXY and NO_PROXY). Throws std::invalid_argument when the CA bundle is not PEM.
std::unique_ptr<HttpTransport> makeHttpsTransport(
    const Url& url, const TlsOptions& tls,
    const sdk::https::ProxySettings& proxy = sdk::https::ProxySettings());

}  // namespace banlieue::vsphere
