// Which outbound HTTPS requests of a plugin go through a proxy: HTTPS_PROXY and NO_PROXY, as a
// platform team sets them on a provider's pod (docs/adr/0029-one-https-client-for-plugins.md).
//  - HTTPS_PROXY (or https_proxy): http://[user:password@]host[:port]; no scheme means http://,
//    the port defaults to 80. Only http:// proxies are supported (a request's own TLS runs
//    through a CONNECT tunnel, so the proxy never sees it in clear).
//  - NO_PROXY (or no_proxy): comma- or space-separated; "*" (nothing is proxied), a host name
//    ("example.com" matches it and every subdomain, ".example.com" only the subdomains), an IP
//    address, or a CIDR block; a ":port" suffix limits an entry to that port. Case-insensitive.
// Unlike Go's http.ProxyFromEnvironment, loopback is proxied unless NO_PROXY names it (as curl
// does): the list is the whole rule, so what a pod does can be read from its environment.
// Header-only and free of Beast, so it can be tested and reused on its own.
#pragma once

#include <banlieue/sdk/text.h>

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace banlieue::sdk::https {

// Where a proxied request connects, and the credentials it presents (already percent-decoded).
struct Proxy {
  std::string host;
  std::string port;
  std::string username;
  std::string password;

  std::string origin() const {
    const bool v6 = host.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + host + "]" : host) + ":" + port;
  }
};

namespace proxy_detail {

inline std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return std::string(s.substr(first, last - first + 1));
}

inline std::string percentDecode(std::string_view text, std::string_view what) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || hex(text[i + 1]) < 0 || hex(text[i + 2]) < 0) {
      throw std::invalid_argument(std::string(what) + ": a '%' not followed by two hex digits");
    }
    out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
    i += 2;
  }
  return out;
}

// host[:port] or [v6][:port] → (host, port); port empty when absent.
inline std::pair<std::string, std::string> splitHostPort(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return {std::string(authority), ""};
    std::string host(authority.substr(1, close - 1));
    std::string port;
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      port = std::string(authority.substr(close + 2));
    }
    return {host, port};
  }
  const auto colon = authority.find(':');
  // More than one ':' without brackets: a bare IPv6 address, no port.
  if (colon == std::string_view::npos || authority.find(':', colon + 1) != std::string_view::npos) {
    return {std::string(authority), ""};
  }
  return {std::string(authority.substr(0, colon)), std::string(authority.substr(colon + 1))};
}

inline bool allDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// An IPv4 or IPv6 address as 16 bytes (IPv4 mapped into ::ffff:0:0/96), or nothing.
struct Address {
  std::array<uint8_t, 16> bytes{};
  bool v4 = false;
};

inline std::optional<Address> parseAddress(const std::string& text) {
  Address a;
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    a.v4 = true;
    a.bytes[10] = 0xff;
    a.bytes[11] = 0xff;
    const auto* b = reinterpret_cast<const uint8_t*>(&v4.s_addr);
    for (int i = 0; i < 4; ++i) a.bytes[12 + i] = b[i];
    return a;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    for (int i = 0; i < 16; ++i) a.bytes[i] = v6.s6_addr[i];
    return a;
  }
  return std::nullopt;
}

inline bool prefixMatches(const Address& block, int bits, const Address& address) {
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    const uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((block.bytes[i] & mask) != (address.bytes[i] & mask)) return false;
  }
  return true;
}

}  // namespace proxy_detail

class ProxySettings {
 public:
  // No proxy at all.
  ProxySettings() = default;

  // From the two values (empty = unset). Throws std::invalid_argument naming the variable and
  // what is wrong with it.
  static ProxySettings parse(std::string_view https_proxy, std::string_view no_proxy) {
    ProxySettings settings;
    const std::string proxy_text = proxy_detail::trim(https_proxy);
    if (!proxy_text.empty()) settings.proxy_ = parseProxy(proxy_text);
    std::string entry;
    auto flush = [&settings, &entry]() {
      if (!entry.empty()) settings.addNoProxy(entry);
      entry.clear();
    };
    for (char c : no_proxy) {
      if (c == ',' || c == ' ' || c == '\t') {
        flush();
      } else {
        entry.push_back(c);
      }
    }
    flush();
    return settings;
  }

  // From the process environment: HTTPS_PROXY, else https_proxy; NO_PROXY, else no_proxy.
  static ProxySettings fromEnvironment() {
    auto get = [](const char* upper, const char* lower) -> std::string_view {
      const char* value = std::getenv(upper);
      if (value == nullptr || *value == '\0') value = std::getenv(lower);
      return value == nullptr ? std::string_view() : std::string_view(value);
    };
    return parse(get("HTTPS_PROXY", "https_proxy"), get("NO_PROXY", "no_proxy"));
  }

  // The proxy a request to host:port goes through, or nothing for a direct connection. `host`
  // is a name or an address, IPv6 without brackets.
  std::optional<Proxy> proxyFor(std::string_view host, std::string_view port) const {
    if (!proxy_ || bypass_all_) return std::nullopt;
    std::string name = asciiLower(std::string(host));
    while (!name.empty() && name.back() == '.') name.pop_back();
    const auto address = proxy_detail::parseAddress(name);
    for (const auto& rule : rules_) {
      if (!rule.port.empty() && rule.port != port) continue;
      if (rule.prefix_bits >= 0) {
        if (address && proxy_detail::prefixMatches(rule.address, rule.prefix_bits, *address)) {
          return std::nullopt;
        }
        continue;
      }
      if (rule.subdomains_only) {
        if (name.size() > rule.name.size() + 1 && name.ends_with("." + rule.name)) {
          return std::nullopt;
        }
      } else if (name == rule.name ||
                 (name.size() > rule.name.size() && name.ends_with("." + rule.name))) {
        return std::nullopt;
      }
    }
    return proxy_;
  }

  const std::optional<Proxy>& proxy() const { return proxy_; }

 private:
  struct Rule {
    std::string name;  // a host name, lower case, without a leading '.'
    bool subdomains_only = false;
    proxy_detail::Address address;  // with prefix_bits >= 0: an address or CIDR block
    int prefix_bits = -1;
    std::string port;  // empty: any port
  };

  static Proxy parseProxy(const std::string& text) {
    std::string rest = text;
    const auto scheme_end = rest.find("://");
    if (scheme_end != std::string::npos) {
      const std::string scheme = asciiLower(rest.substr(0, scheme_end));
      if (scheme != "http") {
        throw std::invalid_argument("HTTPS_PROXY '" + redacted(text) + "': scheme '" + scheme +
                                    "' is not supported (only http:// proxies; the request's "
                                    "own TLS goes through a CONNECT tunnel)");
      }
      rest = rest.substr(scheme_end + 3);
    }
    rest = rest.substr(0, rest.find_first_of("/?#"));
    Proxy proxy;
    if (const auto at = rest.rfind('@'); at != std::string::npos) {
      const std::string userinfo = rest.substr(0, at);
      rest = rest.substr(at + 1);
      const auto colon = userinfo.find(':');
      proxy.username = proxy_detail::percentDecode(userinfo.substr(0, colon), "HTTPS_PROXY");
      if (colon != std::string::npos) {
        proxy.password = proxy_detail::percentDecode(userinfo.substr(colon + 1), "HTTPS_PROXY");
      }
    }
    auto [host, port] = proxy_detail::splitHostPort(rest);
    if (host.empty()) {
      throw std::invalid_argument("HTTPS_PROXY '" + redacted(text) + "' names no host");
    }
    if (port.empty()) port = "80";
    if (!proxy_detail::allDigits(port)) {
      throw std::invalid_argument("HTTPS_PROXY '" + redacted(text) + "' has an invalid port");
    }
    proxy.host = std::move(host);
    proxy.port = std::move(port);
    return proxy;
  }

  // The proxy URL without its password, for messages.
  static std::string redacted(const std::string& text) {
    const auto scheme_end = text.find("://");
    const size_t start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    const auto at = text.find('@', start);
    if (at == std::string::npos) return text;
    const auto colon = text.find(':', start);
    if (colon == std::string::npos || colon > at) return text;
    return text.substr(0, colon + 1) + "***" + text.substr(at);
  }

  void addNoProxy(const std::string& raw) {
    if (raw == "*") {
      bypass_all_ = true;
      return;
    }
    Rule rule;
    std::string entry = asciiLower(raw);
    // A CIDR block or an address (possibly [v6]:port or v4:port).
    if (const auto slash = entry.find('/'); slash != std::string::npos) {
      const auto address = proxy_detail::parseAddress(entry.substr(0, slash));
      const std::string bits = entry.substr(slash + 1);
      const int max_bits = address && address->v4 ? 32 : 128;
      if (!address || !proxy_detail::allDigits(bits) || bits.size() > 3 ||
          std::stoi(bits) > max_bits) {
        throw std::invalid_argument("NO_PROXY entry '" + raw + "' is not a valid CIDR block");
      }
      rule.address = *address;
      rule.prefix_bits = std::stoi(bits) + (address->v4 ? 96 : 0);
      rules_.push_back(rule);
      return;
    }
    if (const auto whole = proxy_detail::parseAddress(entry)) {  // a bare IPv6 address
      rule.address = *whole;
      rule.prefix_bits = 128;
      rules_.push_back(rule);
      return;
    }
    auto [host, port] = proxy_detail::splitHostPort(entry);
    if (!port.empty() && !proxy_detail::allDigits(port)) {
      throw std::invalid_argument("NO_PROXY entry '" + raw + "' has an invalid port");
    }
    rule.port = port;
    if (const auto address = proxy_detail::parseAddress(host)) {
      rule.address = *address;
      rule.prefix_bits = 128;
    } else {
      if (host.starts_with("*.")) host = host.substr(1);  // "*.example.com" as ".example.com"
      rule.subdomains_only = host.starts_with(".");
      if (rule.subdomains_only) host = host.substr(1);
      while (!host.empty() && host.back() == '.') host.pop_back();
      if (host.empty()) throw std::invalid_argument("NO_PROXY entry '" + raw + "' names no host");
      rule.name = host;
    }
    rules_.push_back(rule);
  }

  std::optional<Proxy> proxy_;
  bool bypass_all_ = false;
  std::vector<Rule> rules_;
};

}  // namespace banlieue::sdk::https
