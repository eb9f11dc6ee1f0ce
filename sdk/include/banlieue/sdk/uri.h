// Percent-encoding (RFC 3986, section 2.1) of what goes into a request URL, so that nothing in
// a name (a '/', '?', '#', '%', a space, a bare "..") changes which resource a request reaches
// or what it asks for. The host's Kubernetes client and the plugins that build URLs from names
// (Proxmox, vSphere) share these.
#pragma once

#include <string>
#include <string_view>

namespace banlieue::sdk {

// Every byte but the unreserved characters (ALPHA, DIGIT, '-', '.', '_', '~') as %XX, in
// uppercase hex: one query parameter name or value, or one form field.
inline std::string percentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

// One path segment: percentEncode, except that a segment of only dots is spelt with %2E, so
// that "." and ".." are not dot-segments that a resolver removes (section 5.2.4) to climb the
// path. An empty segment stays empty: callers refuse empty names before building a path.
inline std::string pathSegment(std::string_view text) {
  if (!text.empty() && text.find_first_not_of('.') == std::string_view::npos) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) out += "%2E";
    return out;
  }
  return percentEncode(text);
}

}  // namespace banlieue::sdk
