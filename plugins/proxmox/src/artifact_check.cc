#include "plugins/proxmox/src/artifact_check.h"

#include <banlieue/sdk/digest.h>
#include <banlieue/sdk/status.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>

namespace banlieue::proxmox {
namespace {

using sdk::Code;
using sdk::Error;

}  // namespace

Digest parseDigest(const std::string& text) {
  const size_t colon = text.find(':');
  Digest d;
  if (colon != std::string::npos) {
    d.algorithm = text.substr(0, colon);
    d.hex = text.substr(colon + 1);
  }
  auto lower = [](std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  };
  lower(d.algorithm);
  lower(d.hex);
  const size_t want = sdk::Digest::hexLength(d.algorithm);
  if (want == 0) {
    throw Error(Code::kInvalidArgument, "UnsupportedChecksum",
                "checksum '" + text.substr(0, 72) +
                    "' names no supported algorithm (sha256:<hex> or sha512:<hex>); the import "
                    "is refused rather than left unchecked");
  }
  const bool is_hex = std::all_of(d.hex.begin(), d.hex.end(),
                                  [](unsigned char c) { return std::isxdigit(c) != 0; });
  if (d.hex.size() != want || !is_hex) {
    throw Error(Code::kInvalidArgument, "UnsupportedChecksum",
                d.algorithm + " checksum must be " + std::to_string(want) + " hex digits");
  }
  return d;
}

void verifyArtifact(const std::string& path, const std::vector<Digest>& expected,
                    const std::function<bool()>& stop) {
  if (expected.empty()) {
    throw Error(Code::kInvalidArgument, "ChecksumMissing",
                "no checksum to verify " + path + " against; imports fail closed");
  }
  std::vector<sdk::Digest> digests;
  digests.reserve(expected.size());
  for (const Digest& d : expected) digests.emplace_back(d.algorithm);
  std::unique_ptr<FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) {
    throw Error(Code::kFailedPrecondition, "ArtifactUnreadable", "cannot open " + path);
  }
  std::vector<unsigned char> block(size_t{1} << 20);
  for (;;) {
    if (stop && stop()) throw Error(Code::kCancelled, "Cancelled", "the import was cancelled");
    const size_t n = std::fread(block.data(), 1, block.size(), file.get());
    for (auto& digest : digests) digest.update(block.data(), n);
    if (n < block.size()) break;
  }
  if (std::ferror(file.get()) != 0) {
    throw Error(Code::kFailedPrecondition, "ArtifactUnreadable", "error reading " + path);
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string actual = digests[i].hex();
    if (actual != expected[i].hex) {
      std::string message = path;
      message.append(": ").append(expected[i].algorithm).append(" is ").append(actual);
      message.append(" but ").append(expected[i].hex).append(" was expected; nothing was uploaded");
      throw Error(Code::kFailedPrecondition, "ChecksumMismatch", message);
    }
  }
}

std::string sha256Hex(const std::string& data) {
  return sdk::sha256Hex(data);
}

}  // namespace banlieue::proxmox
