// VMImage checksums ("<alg>:<hex>", spec.sources[].checksum and the imagebuilder's artifact
// checksum) as each reader parses them: the host's image import, the libvirt plugin and the
// Proxmox plugin. Any bytes must give a checksum or a refusal, never a crash. Property: the
// three readers agree on what they accept and on the algorithm and digest they read.
#include "host/roles/images/artifact_checksum.h"
#include "plugins/libvirt/src/checksum.h"
#include "plugins/proxmox/src/artifact_check.h"

#include <banlieue/sdk/status.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace {

using Parsed = std::optional<std::pair<std::string, std::string>>;

Parsed host(const std::string& text) {
  auto parsed = banlieue::roles::images::parseChecksum(text);
  if (!parsed.ok()) return std::nullopt;
  return std::make_pair(parsed->algorithm, parsed->hex);
}

Parsed libvirt(const std::string& text) {
  try {
    auto parsed = banlieue::libvirt::parseChecksum(text);
    return std::make_pair(parsed.algorithm, parsed.hex);
  } catch (const banlieue::sdk::Error&) {
    return std::nullopt;
  }
}

Parsed proxmox(const std::string& text) {
  try {
    auto parsed = banlieue::proxmox::parseDigest(text);
    return std::make_pair(parsed.algorithm, parsed.hex);
  } catch (const banlieue::sdk::Error&) {
    return std::nullopt;
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  Parsed a = host(text);
  Parsed b = libvirt(text);
  Parsed c = proxmox(text);
  if (a != b || a != c) {
    auto show = [](const Parsed& p) {
      return p ? p->first + ":" + p->second : std::string("refused");
    };
    std::fprintf(stderr, "readers disagree on '%s': host %s, libvirt %s, proxmox %s\n",
                 text.c_str(), show(a).c_str(), show(b).c_str(), show(c).c_str());
    std::abort();
  }
  if (a && (a->second.size() != (a->first == "sha256" ? 64u : 128u))) std::abort();
  return 0;
}
