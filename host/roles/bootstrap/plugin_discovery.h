// The plugins installed in a plugin directory, as bootstrap and crdgen see them: each
// sub-directory's provider.json (read with the loader's checks, never dlopened here) and the
// CRDs the plugin ships for its own infrastructure kinds.
#pragma once

#include "host/common/status_or.h"
#include "host/plugin/manifest.h"

#include <rapidjson/document.h>

#include <filesystem>
#include <vector>

namespace banlieue::roles::bootstrap {

struct DiscoveredPlugin {
  ::banlieue::plugin::Manifest manifest;
  std::vector<rapidjson::Document> crds;  // validated CustomResourceDefinitions
  std::vector<std::string> crd_sources;   // the file each of crds came from
};

struct DiscoveryOptions {
  // A missing directory is an empty plugin set (a cluster bootstrapped before any plugin is
  // installed); anything else wrong is an error naming the plugin and file.
  bool missing_ok = true;
};

// Plugins sorted by name. Every problem (untrusted directory, broken manifest, a CRD that is
// not apiextensions.k8s.io/v1, names a kind the manifest does not serve, or claims a
// banlieue.io group; a served kind banlieue does not define without the plugin's CRD
// (PluginCrdMissing); one CRD shipped twice, by two plugins or two files
// (DuplicatePluginCrd)) fails the whole call: installing half a plugin set is worse than none.
StatusOr<std::vector<DiscoveredPlugin>> discoverPlugins(const std::filesystem::path& plugin_dir,
                                                        const DiscoveryOptions& options = {});

// One plugin directory: its manifest and CRDs, with the same checks (a third party's plugin,
// outside any plugin directory; `banlieue plugin manifests`).
StatusOr<DiscoveredPlugin> discoverPlugin(const std::filesystem::path& directory);

// Checks one plugin-shipped document is a CRD for a kind the manifest serves.
Status validatePluginCrd(const ::banlieue::plugin::Manifest& manifest, const rapidjson::Value& crd,
                         const std::string& source);

}  // namespace banlieue::roles::bootstrap
