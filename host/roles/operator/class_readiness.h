// Whether a ProviderClass is usable, decided from what the operator can see without running
// any plugin code: the plugin's provider.json (resolved inside the operator's --plugin-dir),
// the backend's shared ClusterRole, and the class's own fields. Also the infrastructure kind
// the controller needs (status.machineKind), from the manifest's first `infrastructure` entry.
#pragma once

#include "host/api/provider.h"
#include "host/common/status_or.h"
#include "host/plugin/manifest.h"

#include <filesystem>
#include <optional>
#include <string>

namespace banlieue::roles::provider_operator {

struct PluginDirectories {
  // Where this operator reads manifests.
  std::filesystem::path local;
  // Where the provider image keeps them: absolute spec.plugin.path values below it are read
  // from the same relative place under `local`.
  std::string image = "/usr/lib/banlieue/plugins";
};

// The manifest spec.plugin.path names. Refusals carry plugin_path.h's reasons, PluginNotSet,
// ManifestInvalid, or BackendMismatch (the manifest serves another backend).
StatusOr<plugin::Manifest> classManifest(const api::ProviderClass& provider_class,
                                         const PluginDirectories& dirs);

struct ClassReadiness {
  bool ready = false;
  std::string reason;  // Ready, or the first problem found
  std::string message;
  std::optional<api::InfrastructureKind> machine_kind;
};

// Problems in this order: the plugin (unknown or unreadable), MissingClusterRole,
// PodFieldsOnExternal, InvalidImage; otherwise Ready.
ClassReadiness evaluateClass(const api::ProviderClass& provider_class,
                             const PluginDirectories& dirs, bool cluster_role_exists);

}  // namespace banlieue::roles::provider_operator
