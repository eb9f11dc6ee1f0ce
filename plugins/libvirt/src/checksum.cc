#include "plugins/libvirt/src/checksum.h"

#include <banlieue/sdk/digest.h>
#include <banlieue/sdk/status.h>

#include <cctype>
#include <fstream>
#include <vector>

namespace banlieue::libvirt {

using sdk::Code;
using sdk::Error;

ExpectedChecksum parseChecksum(const std::string& text) {
  size_t colon = text.find(':');
  ExpectedChecksum out;
  out.algorithm = text.substr(0, colon == std::string::npos ? 0 : colon);
  for (char& c : out.algorithm) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (colon == std::string::npos || (out.algorithm != "sha256" && out.algorithm != "sha512")) {
    throw Error(Code::kInvalidArgument, "UnsupportedChecksum",
                "checksum '" + text.substr(0, 80) + "' must be sha256:<hex> or sha512:<hex>");
  }
  out.hex = text.substr(colon + 1);
  for (char& c : out.hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t want = out.algorithm == "sha256" ? 64 : 128;
  bool hex = out.hex.size() == want;
  for (char c : out.hex) hex = hex && std::isxdigit(static_cast<unsigned char>(c)) != 0;
  if (!hex) {
    throw Error(
        Code::kInvalidArgument, "UnsupportedChecksum",
        "checksum digest must be " + std::to_string(want) + " hex digits for " + out.algorithm);
  }
  return out;
}

std::string fileDigest(const std::string& path, const std::string& algorithm,
                       const std::function<bool()>& stop) {
  sdk::Digest digest(algorithm == "sha512" ? "sha512" : "sha256");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(Code::kFailedPrecondition, "ArtifactUnreadable", "cannot read " + path);
  std::vector<char> buf(size_t{1} << 20);
  while (in) {
    if (stop && stop()) return {};
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) digest.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad())
    throw Error(Code::kFailedPrecondition, "ArtifactUnreadable", "error reading " + path);
  return digest.hex();
}

}  // namespace banlieue::libvirt
