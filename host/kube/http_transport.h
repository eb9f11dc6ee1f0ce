// The one seam between the Kubernetes client and an HTTP library. One implementation
// (cpprestsdk, in http_transport_cpprest.cc, the only file that includes it) and scripted
// fakes in tests. If cpprestsdk ever fails us, Boost.Beast replaces it here without touching
// callers (DESIGN.md section 5).
#pragma once

#include "host/common/status_or.h"
#include "host/kube/config.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace banlieue::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // path and query, e.g. /api/v1/namespaces/x/configmaps?limit=500
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lowercase names
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;

  // Sends a request and reads the whole response. Transport failures (connect, TLS,
  // timeout) are errors; any HTTP status is a response.
  virtual StatusOr<HttpResponse> send(const HttpRequest& request) = 0;

  // Sends a request whose response body is a stream of lines (watch). on_line runs for each
  // complete line and returns false to stop early. Non-2xx responses are returned with their
  // body unread by on_line. The request's timeout counts idle time, so callers keep the
  // server-side timeoutSeconds below it.
  virtual StatusOr<HttpResponse> stream(const HttpRequest& request,
                                        const std::function<bool(std::string_view)>& on_line,
                                        const std::atomic<bool>* cancel) = 0;

  // The server's host:port, the `host` label of the rest_client_* metrics (empty in fakes).
  virtual std::string host() const { return {}; }
};

// The real transport for a connection: TLS verification on unless the connection says
// otherwise, client certificates, bearer tokens re-read per request.
StatusOr<std::unique_ptr<HttpTransport>> makeHttpTransport(const Connection& connection);

// How many connection pools the real transports of this process hold: one per request timeout
// in use, plus one replaced after a server restart until the last request made on it ends.
// For tests and diagnostics.
size_t liveConnectionPools();

}  // namespace banlieue::kube
