// The Proxmox plugin's HttpTransport: the SDK's Client, one TLS connection per request on its
// own io_context (ADR 0009), so calls of one Provider run concurrently without sharing a
// socket. The cost, a handshake per request, is small next to PVE's task durations.
#include "plugins/proxmox/src/https.h"

#include <banlieue/sdk/https_client.h>
#include <banlieue/sdk/websocket_client.h>

#include <utility>

namespace banlieue::proxmox {
namespace {

class SdkHttps final : public HttpTransport {
 public:
  SdkHttps(const Endpoint& endpoint, sdk::https::Options options)
      : endpoint_(endpoint), options_(options), client_(endpoint, std::move(options)) {}

  std::unique_ptr<WebSocket> openWebSocket(const HttpRequest& request,
                                           std::chrono::milliseconds timeout) override {
    return sdk::https::openWebSocket(endpoint_, options_, request, timeout);
  }

  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    if (request.body.empty()) return client_.send(request, timeout);
    HttpRequest form = request;
    form.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    return client_.send(form, timeout);
  }

 private:
  const Endpoint endpoint_;
  const sdk::https::Options options_;
  const sdk::https::Client client_;
};

}  // namespace

Endpoint Endpoint::parse(const std::string& url) {
  sdk::https::EndpointRules rules;
  rules.default_port = "8006";
  rules.plain_http_refusal = "would send the API token in clear (PVE serves only HTTPS)";
  Endpoint e{sdk::https::Endpoint::parse(url, rules)};
  e.path.clear();
  return e;
}

std::unique_ptr<HttpTransport> makeHttpsTransport(const Endpoint& endpoint, const TlsOptions& tls,
                                                  const sdk::https::ProxySettings& proxy) {
  sdk::https::Options options;
  options.tls = tls;
  options.proxy = proxy;
  options.user_agent = "banlieue-provider-proxmox";
  options.max_response_bytes = 32ull << 20;  // /cluster/resources of a large cluster
  return std::make_unique<SdkHttps>(endpoint, std::move(options));
}

}  // namespace banlieue::proxmox
