// UTF-8 validity, for text that must be Unicode where it goes (YAML, Secret data a guest reads
// as text): no stray continuation byte, no truncated or overlong sequence, no surrogate, nothing
// past U+10FFFF.
#pragma once

#include <cstddef>
#include <string_view>

namespace banlieue::common {

// The offset of the first byte that does not start a valid UTF-8 sequence, or text.size().
size_t firstInvalidUtf8(std::string_view text);

inline bool isValidUtf8(std::string_view text) {
  return firstInvalidUtf8(text) == text.size();
}

}  // namespace banlieue::common
