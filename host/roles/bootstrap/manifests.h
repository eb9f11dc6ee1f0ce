// Everything `banlieue bootstrap operator` installs, as pure builders: the namespaces, CRDs,
// the controller's, operator's and imagebuilder's identities, least-privilege RBAC and
// Deployments, the import Jobs' ServiceAccount, each plugin's provider ClusterRole, and one
// ProviderClass per plugin. The same objects are
// applied with server-side apply or printed for GitOps (--dry-run).
#pragma once

#include "host/roles/bootstrap/plugin_discovery.h"

#include <rapidjson/document.h>

#include <string>
#include <vector>

namespace banlieue::roles::bootstrap {

inline constexpr const char* kFieldManager = "banlieue.io/bootstrap";
inline constexpr const char* kDefaultNamespace = "banlieue-system";
inline constexpr const char* kControllerName = "banlieue-controller";
inline constexpr const char* kOperatorName = "banlieue-operator";
inline constexpr const char* kImagePluginDir = "/usr/lib/banlieue/plugins";
inline constexpr const char* kImageBuilderName = "banlieue-imagebuilder";
// Bound per Provider by the operator in the build namespace: manage its import Jobs there.
inline constexpr const char* kProviderImportsRole = "banlieue-provider-imports";

struct BootstrapOptions {
  std::string namespace_ = kDefaultNamespace;
  // The one image (binary + in-tree plugins), deploy/Dockerfile.
  std::string image;
  // Namespaces where the controller may read userData Secrets and ConfigMaps (a RoleBinding
  // each): never a cluster-wide Secret grant.
  std::vector<std::string> userdata_namespaces = {"default"};
  // Where plugins live inside the image; ProviderClass spec.plugin.path points below it.
  std::string image_plugin_dir = kImagePluginDir;
  // The image pipeline's namespace: OSArtifacts, merged cloud-configs and the import Jobs
  // (docs/adr/0013, 0015).
  std::string build_namespace = "banlieue-imagebuild";
  bool provider_classes = true;
  // Leave the CRDs out (GitOps setups that manage CRDs on their own; deploy/install/).
  bool crds = true;
};

// The default image: localhost/banlieue:<this binary's version>.
std::string defaultImage();

// repository, tag and digest of an image reference ("repo:tag", "repo@sha256:..",
// "host:5000/repo:tag@sha256:..").
struct ImageReference {
  std::string repository;
  std::string tag;
  std::string digest;
};
ImageReference parseImageReference(const std::string& image);

// A backend's two ClusterRoles (roles/common/backend_roles.h) from its manifest and CRDs:
// banlieue-provider-<backend> and banlieue-infrastructure-<backend>, labelled for
// aggregation. Bootstrap installs them for the plugins in banlieue's image;
// `banlieue plugin rbac` prints them for a third party's plugin to ship.
std::vector<rapidjson::Document> backendClusterRoles(const DiscoveredPlugin& plugin);

// CRDs first (banlieue's, then the plugins'), so a stream applied in order works.
std::vector<rapidjson::Document> buildCrds(const std::vector<DiscoveredPlugin>& plugins);

// Every object in apply order: Namespaces, CRDs, RBAC, Deployments, ProviderClasses.
std::vector<rapidjson::Document> buildBootstrapObjects(
    const BootstrapOptions& options, const std::vector<DiscoveredPlugin>& plugins);

}  // namespace banlieue::roles::bootstrap
