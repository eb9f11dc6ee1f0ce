// A VMImage's spec.cloudConfigs[] as the imagebuilder merges them (mergeCloudConfigs): YAML from
// users' Secrets and ConfigMaps. The input holds the layers, separated by "\n#---\n" lines. Any
// layers must give a merged cloud-config or a CloudConfigInvalid / CloudConfigConflict error,
// never a crash or an escaping exception. Properties: the result starts with "#cloud-config"
// and is YAML whose top level is a map.
#include "host/roles/images/cloud_config_merge.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using banlieue::roles::images::CloudConfigLayer;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSeparator = "\n#---\n";
  std::vector<CloudConfigLayer> layers;
  for (size_t at = 0;;) {
    size_t end = text.find(kSeparator, at);
    std::string_view layer = text.substr(at, end == std::string_view::npos ? end : end - at);
    layers.push_back({"cloudConfigs[" + std::to_string(layers.size()) + "]", std::string(layer)});
    if (end == std::string_view::npos) break;
    at = end + kSeparator.size();
  }
  auto merged = banlieue::roles::images::mergeCloudConfigs(layers);
  if (!merged.ok()) {
    const auto& reason = merged.status().reason();
    if (reason != "CloudConfigInvalid" && reason != "CloudConfigConflict") std::abort();
    return 0;
  }
  if (merged->rfind("#cloud-config\n", 0) != 0) std::abort();
  try {
    YAML::Node back = YAML::Load(*merged);
    if (!back.IsMap()) {
      std::fprintf(stderr, "the merged cloud-config is not a map:\n%s\n", merged->c_str());
      std::abort();
    }
  } catch (const YAML::Exception& e) {
    std::fprintf(stderr, "the merged cloud-config is not YAML (%s):\n%s\n", e.what(),
                 merged->c_str());
    std::abort();
  }
  return 0;
}
