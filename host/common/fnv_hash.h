// FNV-1a: a hash that is the same in every build, process and platform (std::hash is not), for
// generated names and for "what was applied" annotations compared across restarts.
#pragma once

#include <cstdint>
#include <string_view>

namespace banlieue::common {

inline constexpr uint32_t kFnv1a32OffsetBasis = 2166136261U;
inline constexpr uint64_t kFnv1a64OffsetBasis = 14695981039346656037ULL;

// The standard 64-bit basis with its last digit lost, which the controller's applied-hash
// annotation, import Job names and the OSArtifact build hash were first minted with. Mixing is
// as good; it stays so those names and annotations do not change under running clusters.
inline constexpr uint64_t kFnv1a64TruncatedBasis = 1469598103934665603ULL;

constexpr uint32_t fnv1a32(std::string_view text) {
  uint32_t hash = kFnv1a32OffsetBasis;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619U;
  }
  return hash;
}

constexpr uint64_t fnv1a64(std::string_view text, uint64_t basis = kFnv1a64OffsetBasis) {
  uint64_t hash = basis;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace banlieue::common
