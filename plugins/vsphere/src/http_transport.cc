// The vSphere plugin's HttpTransport: the SDK's keep-alive HTTPS connection. The only source
// file of the plugin that includes Boost.Beast (through banlieue/sdk/https_client.h).
#include "plugins/vsphere/src/http_transport.h"

#include <banlieue/sdk/https_client.h>

#include <utility>

namespace banlieue::vsphere {
namespace {

class SdkTransport final : public HttpTransport {
 public:
  SdkTransport(const Url& url, sdk::https::Options options)
      : connection_(url, std::move(options)) {}

  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    return connection_.send(request, timeout);
  }
  void reset() override { connection_.reset(); }

 private:
  sdk::https::Connection connection_;
};

}  // namespace

Url Url::parse(const std::string& text) {
  sdk::https::EndpointRules rules;
  rules.default_path = "/sdk";
  rules.plain_http_refusal = "would send the vCenter password in clear";
  return Url{sdk::https::Endpoint::parse(text, rules)};
}

std::unique_ptr<HttpTransport> makeHttpsTransport(const Url& url, const TlsOptions& tls,
                                                  const sdk::https::ProxySettings& proxy) {
  sdk::https::Options options;
  options.tls = tls;
  options.proxy = proxy;
  options.user_agent = "banlieue-provider-vsphere";
  options.max_response_bytes = 64ull << 20;  // a huge RetrievePropertiesEx page
  return std::make_unique<SdkTransport>(url, std::move(options));
}

}  // namespace banlieue::vsphere
