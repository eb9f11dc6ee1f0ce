// Whether a ProviderClass is usable, decided from what the operator can see without running
// any plugin code: what the class's provider pods published (status.plugin), the operator's
// own copy of the plugin's provider.json when it has one (resolved inside its --plugin-dir;
// a third party's plugin lives only in its provider image), the backend's shared ClusterRole,
// and the class's own fields. Also the infrastructure kinds the controller needs
// (status.machineKind and machineKinds): the published ones win over the local copy's.
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
  std::optional<api::InfrastructureKind> machine_kind;  // the first of machine_kinds
  std::vector<api::InfrastructureKind> machine_kinds;
  // Whether a provider pod has published the plugin it loaded (status.plugin), and why not.
  bool plugin_published = false;
  std::string published_reason;
  std::string published_message;
};

// Problems in this order: the plugin (a local copy that is unreadable or serves another
// backend; none at all is no problem once the class names an image, whose pods publish it),
// NoInfrastructureKind, MissingClusterRole, PodFieldsOnExternal, InvalidImage; otherwise Ready.
ClassReadiness evaluateClass(const api::ProviderClass& provider_class,
                             const PluginDirectories& dirs, bool cluster_role_exists);

}  // namespace banlieue::roles::provider_operator
