// File digests for image import (sha256, sha512 via OpenSSL's EVP) and the VMImage checksum
// syntax "<alg>:<hex>". Imports fail closed: an unknown algorithm or a mismatch stops them.
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace banlieue::libvirt {

struct ExpectedChecksum {
  std::string algorithm;  // sha256 | sha512
  std::string hex;        // lower case
};

// Parses "<alg>:<hex>". Throws sdk::Error INVALID_ARGUMENT (UnsupportedChecksum) for another
// algorithm or a malformed digest.
ExpectedChecksum parseChecksum(const std::string& text);

// Lower-case hex digest of the file. stop() is polled between blocks (returns "" when it
// asked to stop). Throws sdk::Error FAILED_PRECONDITION when the file cannot be read.
std::string fileDigest(const std::string& path, const std::string& algorithm,
                       const std::function<bool()>& stop = {});

}  // namespace banlieue::libvirt
