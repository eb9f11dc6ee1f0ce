#include "host/roles/images/artifact_checksum.h"

#include <banlieue/sdk/digest.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace banlieue::roles::images {
namespace {

size_t digestLength(const std::string& algorithm) {
  if (algorithm == "sha256") return 32;
  if (algorithm == "sha512") return 64;
  return 0;
}

}  // namespace

StatusOr<Checksum> parseChecksum(const std::string& text) {
  if (text.empty()) {
    return error(Code::kFailedPrecondition, "ChecksumMissing",
                 "the artifact has no checksum to verify; imports fail closed");
  }
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    return error(Code::kInvalidArgument, "ChecksumMalformed",
                 "checksum '" + text + "' is not <algorithm>:<hex> (sha256: or sha512:)");
  }
  Checksum c{text.substr(0, colon), text.substr(colon + 1)};
  // As the plugins that import read it: the algorithm's case does not matter (found by
  // fuzz/checksum_fuzz.cc: "SHA256:..." was refused here and accepted by libvirt and Proxmox).
  for (char& ch : c.algorithm) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  size_t bytes = digestLength(c.algorithm);
  if (bytes == 0) {
    return error(Code::kInvalidArgument, "ChecksumAlgorithmUnsupported",
                 "checksum algorithm '" + c.algorithm + "' is not supported (sha256 or sha512)");
  }
  if (c.hex.size() != bytes * 2) {
    return error(Code::kInvalidArgument, "ChecksumMalformed",
                 c.algorithm + " checksum must have " + std::to_string(bytes * 2) +
                     " hex digits, not " + std::to_string(c.hex.size()));
  }
  for (char& ch : c.hex) {
    if (ch >= 'A' && ch <= 'F') ch = static_cast<char>(ch - 'A' + 'a');
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
      return error(Code::kInvalidArgument, "ChecksumMalformed",
                   c.algorithm + " checksum contains a non-hex character");
    }
  }
  return c;
}

StatusOr<std::string> fileDigest(const std::filesystem::path& file, const std::string& algorithm,
                                 const HashProgress& progress, const std::atomic<bool>* cancel) {
  if (!sdk::Digest::supported(algorithm)) {
    return error(Code::kInvalidArgument, "ChecksumAlgorithmUnsupported",
                 "checksum algorithm '" + algorithm + "' is not supported (sha256 or sha512)");
  }
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return error(Code::kFailedPrecondition, "ArtifactUnreadable",
                 "cannot open " + file.string() + ": " + std::strerror(errno));
  }
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
  std::error_code ec;
  uint64_t total = std::filesystem::file_size(file, ec);
  sdk::Digest digest(algorithm);
  std::vector<unsigned char> buffer(size_t{1} << 20);
  uint64_t done = 0;
  for (;;) {
    if (cancel != nullptr && cancel->load()) {
      return error(Code::kCancelled, "Cancelled", "checksum verification was cancelled");
    }
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return error(Code::kFailedPrecondition, "ArtifactUnreadable",
                   "cannot read " + file.string() + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    digest.update(buffer.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
    if (progress) progress(done, total);
  }
  return digest.hex();
}

Status verifyChecksum(const std::filesystem::path& file, const Checksum& expected,
                      const HashProgress& progress, const std::atomic<bool>* cancel) {
  auto actual = fileDigest(file, expected.algorithm, progress, cancel);
  if (!actual.ok()) return actual.status();
  if (*actual != expected.hex) {
    return error(Code::kFailedPrecondition, "ChecksumMismatch",
                 file.filename().string() + " has " + expected.algorithm + " " + *actual +
                     ", expected " + expected.hex + "; refusing to import");
  }
  return Status::ok();
}

}  // namespace banlieue::roles::images
