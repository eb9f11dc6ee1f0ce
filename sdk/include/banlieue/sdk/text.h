// Small text helpers plugins share (header-only, like the rest of the SDK).
#pragma once

#include <algorithm>
#include <string>

namespace banlieue::sdk {

// ASCII lower case, byte by byte (header names, units, hex digests); other bytes unchanged.
inline std::string asciiLower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
  });
  return s;
}

}  // namespace banlieue::sdk
