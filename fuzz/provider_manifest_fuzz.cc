// provider.json as the plugin host checks it before any plugin code runs (parseManifest).
// Any bytes must give a Manifest or an InvalidManifest Status. Properties, the manifest's
// security promises: the library is a plain file name in the plugin directory, every sample
// and CRD path stays inside it, and a sha256 pin is 64 lowercase hex digits.
#include "host/plugin/manifest.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

const std::filesystem::path kDirectory = "/usr/lib/banlieue/plugins/fuzz";

bool staysInside(const std::string& relative) {
  auto resolved = (kDirectory / relative).lexically_normal();
  auto rel = resolved.lexically_relative(kDirectory);
  return !relative.empty() && !rel.empty() && *rel.begin() != "..";
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = banlieue::plugin::parseManifest(std::move(text), kDirectory);
  if (!manifest.ok()) {
    if (manifest.status().reason() != "InvalidManifest") std::abort();
    return 0;
  }
  if (manifest->libraryPath().parent_path() != kDirectory) std::abort();
  if (!staysInside(manifest->library)) std::abort();
  for (const auto& [kind, path] : manifest->samples) {
    if (!staysInside(path)) std::abort();
  }
  for (const auto& path : manifest->crds) {
    if (!staysInside(path)) std::abort();
  }
  if (manifest->sha256) {
    if (manifest->sha256->size() != 64) std::abort();
    for (char c : *manifest->sha256) {
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) std::abort();
    }
  }
  if (manifest->abi_major < 1 || manifest->name.empty() || manifest->name.size() > 63) std::abort();
  (void)banlieue::plugin::checkAbiCompatibility(*manifest, 1, 0);
  return 0;
}
