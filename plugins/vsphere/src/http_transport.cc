// Endpoint parsing and response helpers shared by every HttpTransport.
#include "plugins/vsphere/src/http_transport.h"

#include <banlieue/sdk/text.h>

#include <algorithm>
#include <cctype>

namespace banlieue::vsphere {
namespace {}  // namespace

Url Url::parse(const std::string& text) {
  Url url;
  auto scheme_end = text.find("://");
  if (scheme_end == std::string::npos) {
    throw std::invalid_argument("endpoint '" + text + "' has no scheme (want https://host/sdk)");
  }
  url.scheme = sdk::asciiLower(text.substr(0, scheme_end));
  if (url.scheme == "http") {
    throw std::invalid_argument("endpoint '" + text +
                                "': plain http would send the vCenter password in clear; use "
                                "https:// (with a caBundle)");
  }
  if (url.scheme != "https") {
    throw std::invalid_argument("endpoint '" + text + "': scheme must be https");
  }
  std::string rest = text.substr(scheme_end + 3);
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "/sdk" : rest.substr(slash);
  if (url.path == "/") url.path = "/sdk";
  if (authority.find('@') != std::string::npos) {
    throw std::invalid_argument("endpoint must not carry credentials; use credentialsRef");
  }
  if (!authority.empty() && authority.front() == '[') {  // [v6]:port
    auto close = authority.find(']');
    if (close == std::string::npos) throw std::invalid_argument("endpoint: unterminated '['");
    url.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      url.port = authority.substr(close + 2);
    }
  } else {
    auto colon = authority.rfind(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) url.port = authority.substr(colon + 1);
  }
  if (url.host.empty()) throw std::invalid_argument("endpoint '" + text + "' has no host");
  if (url.port.empty()) url.port = "443";
  if (!std::all_of(url.port.begin(), url.port.end(),
                   [](unsigned char c) { return std::isdigit(c); })) {
    throw std::invalid_argument("endpoint '" + text + "' has a bad port");
  }
  return url;
}

std::vector<std::string> HttpResponse::all(const std::string& lower_name) const {
  std::vector<std::string> values;
  for (const auto& [name, value] : headers) {
    if (name == lower_name) values.push_back(value);
  }
  return values;
}

}  // namespace banlieue::vsphere
