#include "plugins/vsphere/src/naming.h"

#include <cstdint>
#include <cstdio>

namespace banlieue::vsphere {

std::string slugify(const std::string& text) {
  std::string out;
  bool pending_dash = false;
  for (unsigned char c : text) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<unsigned char>(c - 'A' + 'a');
      keep = true;
    }
    if (!keep) {
      pending_dash = !out.empty();
      continue;
    }
    if (pending_dash) out += '-';
    pending_dash = false;
    out += static_cast<char>(c);
  }
  return out;
}

std::string collisionSafeName(const std::vector<std::string>& parts) {
  std::string dashed, nul_joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      dashed += '-';
      nul_joined += '\0';
    }
    dashed += parts[i];
    nul_joined += parts[i];
  }
  std::string slug = slugify(dashed);
  if (slug.size() <= 63) return slug;
  uint32_t hash = 0x811c9dc5u;
  for (unsigned char c : nul_joined) {
    hash ^= c;
    hash *= 0x01000193u;
  }
  std::string head = slug.substr(0, 54);
  while (!head.empty() && head.back() == '-') head.pop_back();
  char suffix[10];
  std::snprintf(suffix, sizeof(suffix), "-%08x", hash);
  return head + suffix;
}

}  // namespace banlieue::vsphere
