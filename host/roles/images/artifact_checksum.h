// The artifact checksum an import verifies before anything reaches a backend: "<alg>:<hex>"
// with alg sha256 or sha512 (VMImage spec.sources[].checksum, status.buildArtifact.checksum).
// Everything else fails closed: an unknown algorithm, a malformed digest, an unreadable file
// and a mismatch are all errors, never a skipped check.
#pragma once

#include "host/common/status_or.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace banlieue::roles::images {

struct Checksum {
  std::string algorithm;  // sha256 or sha512
  std::string hex;        // lowercase
};

// Reasons: ChecksumMissing (empty), ChecksumAlgorithmUnsupported, ChecksumMalformed.
StatusOr<Checksum> parseChecksum(const std::string& text);

// Called as bytes are hashed (done, total); may be empty.
using HashProgress = std::function<void(uint64_t done, uint64_t total)>;

// The file's digest in `algorithm`, streamed. Reason ArtifactUnreadable on I/O errors;
// Cancelled when `cancel` turns true.
StatusOr<std::string> fileDigest(const std::filesystem::path& file, const std::string& algorithm,
                                 const HashProgress& progress = {},
                                 const std::atomic<bool>* cancel = nullptr);

// OK when the file's digest matches; reason ChecksumMismatch (naming both digests) otherwise.
Status verifyChecksum(const std::filesystem::path& file, const Checksum& expected,
                      const HashProgress& progress = {}, const std::atomic<bool>* cancel = nullptr);

}  // namespace banlieue::roles::images
