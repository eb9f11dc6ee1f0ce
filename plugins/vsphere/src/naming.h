// Failure-domain names: a DNS-label slug of the parts, and a hashed suffix when the slug is
// too long, so two long names that share a prefix still differ (banlieue-spec.md 4.4.1).
#pragma once

#include <string>
#include <vector>

namespace banlieue::vsphere {

// Lowercase ASCII letters and digits; any run of other characters becomes one '-'; no '-' at
// either end.
std::string slugify(const std::string& text);

// slugify(parts joined by '-') when it fits in 63 characters; otherwise its first 54
// characters (trailing '-' trimmed) + '-' + 8 hex digits of FNV-1a-32 over the parts joined
// by NUL.
std::string collisionSafeName(const std::vector<std::string>& parts);

}  // namespace banlieue::vsphere
