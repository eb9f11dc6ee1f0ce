// The fail-closed checksum gate of image import: every digest the import must satisfy (the
// host's sha256 of the artifact and the VMImage source's own "<alg>:<hex>") is computed in one
// read of the file, before a byte goes to a node. Only sha256 and sha512 are known; anything
// else refuses the import rather than skipping the check.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace banlieue::proxmox {

struct Digest {
  std::string algorithm;  // sha256 | sha512
  std::string hex;        // lower case
  bool operator==(const Digest&) const = default;
};

// "sha256:<64 hex>" or "sha512:<128 hex>". Throws sdk::Error INVALID_ARGUMENT with reason
// UnsupportedChecksum for another algorithm, a missing colon or a digest of the wrong shape.
Digest parseDigest(const std::string& text);

// Reads the file once and compares each expected digest. Throws sdk::Error
// FAILED_PRECONDITION/ChecksumMismatch naming the algorithm and both values,
// FAILED_PRECONDITION/ArtifactUnreadable, or CANCELLED/Cancelled when stop() says so.
void verifyArtifact(const std::string& path, const std::vector<Digest>& expected,
                    const std::function<bool()>& stop = {});

// Lower-case hex sha256 of a string (names content-addressed snippets).
std::string sha256Hex(const std::string& data);

}  // namespace banlieue::proxmox
