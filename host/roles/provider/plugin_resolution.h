// From a Provider to the loaded plugin that serves it: Provider -> ProviderClass -> the class's
// spec.plugin.path (default: the backend's own directory) resolved inside the plugin directory
// -> the loader's checks. Every refusal carries a reason for the Provider's conditions.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"
#include "host/plugin/plugin.h"

#include <filesystem>
#include <memory>
#include <string>

namespace banlieue::roles::provider {

inline const kube::ResourceType kProviderType{"banlieue.io", "v1alpha1", "providers", true};
inline const kube::ResourceType kProviderClassType{"banlieue.io", "v1alpha1", "providerclasses",
                                                   false};

struct ResolvedPlugin {
  std::shared_ptr<plugin::Plugin> plugin;
  std::string class_name;
  std::filesystem::path directory;  // the plugin's directory, inside the plugin directory
  // The class's spec.image as a reference (repo:tag, repo@digest, repo:tag@digest); empty for
  // an External class. Import Jobs run it: it holds this binary and the same plugins.
  std::string container_image;
  std::string plugin_sha256;     // the class's spec.plugin.sha256 the plugin was loaded under
  int64_t class_generation = 0;  // the class's metadata.generation it was resolved from
};

// The class's spec.plugin.sha256, when set, pins the library (PluginChecksumMismatch names both
// digests); the plugin must be named for `backend` in its provider.json. Both are checked
// before any plugin code runs.
// Reasons: ProviderNotFound, ProviderClassNotFound, BackendMismatch (the class, or the plugin
// its path names, is for another backend than this process was started for),
// PluginPathInvalid, PluginPathEscapes, PluginNotFound, and the loader's own (e.g.
// AbiMismatch, PluginChecksumMismatch, PluginLoadFailed).
StatusOr<ResolvedPlugin> resolvePlugin(kube::KubeClient& client, const std::string& backend,
                                       const std::string& provider_namespace,
                                       const std::string& provider_name,
                                       const std::filesystem::path& plugin_dir);

}  // namespace banlieue::roles::provider
