#include "host/roles/operator/class_readiness.h"

#include "host/plugin/plugin_path.h"
#include "host/roles/operator/workload.h"
#include "host/roles/operator/workload_names.h"

namespace banlieue::roles::provider_operator {
namespace {

// The path as it would be seen inside the image, made relative to the image's plugin
// directory when it lies below it, so the operator can look at its own copy.
std::string localPluginPath(const std::string& path, const std::string& image_dir) {
  std::string prefix = image_dir;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty() && path.size() > prefix.size() + 1 &&
      path.compare(0, prefix.size(), prefix) == 0 && path[prefix.size()] == '/') {
    return path.substr(prefix.size() + 1);
  }
  return path;
}

bool hasPodFields(const api::ProviderClassSpec& spec) {
  return spec.image.has_value() || spec.resources.has_value() || !spec.node_selector.empty() ||
         !spec.tolerations.empty() || !spec.workload_namespace.empty() || spec.replicas != 1;
}

}  // namespace

StatusOr<plugin::Manifest> classManifest(const api::ProviderClass& provider_class,
                                         const PluginDirectories& dirs) {
  const auto& spec = provider_class.spec;
  if (!spec.plugin || spec.plugin->path.empty()) {
    return error(Code::kFailedPrecondition, "PluginNotSet",
                 "ProviderClass " + provider_class.metadata.name + " has no spec.plugin.path");
  }
  auto directory =
      plugin::resolvePluginPath(dirs.local, localPluginPath(spec.plugin->path, dirs.image));
  if (!directory.ok()) return directory.status();
  auto manifest = plugin::readManifest(*directory);
  if (!manifest.ok()) {
    return error(Code::kFailedPrecondition, "ManifestInvalid", manifest.status().message());
  }
  if (manifest->name != spec.backend) {
    return error(Code::kFailedPrecondition, "BackendMismatch",
                 "plugin " + manifest->file.string() + " serves backend '" + manifest->name +
                     "', the class runs backend '" + spec.backend + "'");
  }
  return manifest;
}

ClassReadiness evaluateClass(const api::ProviderClass& provider_class,
                             const PluginDirectories& dirs, bool cluster_role_exists) {
  ClassReadiness out;
  const auto& spec = provider_class.spec;
  auto fail = [&](std::string reason, std::string message) {
    if (!out.machine_kinds.empty()) out.machine_kind = out.machine_kinds.front();
    out.reason = std::move(reason);
    out.message = std::move(message);
    return out;
  };
  const auto& published = provider_class.status.plugin;
  if (published && !published->infrastructure_kinds.empty()) {
    out.machine_kinds = published->infrastructure_kinds;
    out.plugin_published = true;
    out.published_reason = "Published";
    out.published_message = "a provider pod loaded plugin " + published->name + " " +
                            published->version + " (ABI " + published->abi + ")";
  } else {
    out.published_reason = "AwaitingProviderPod";
    out.published_message =
        "no provider pod of this class has loaded its plugin yet: it publishes the plugin's "
        "kinds once a Provider of the class runs";
  }
  auto manifest = classManifest(provider_class, dirs);
  // Not in the operator's image is normal for a plugin shipped in its own provider image
  // (docs/adr/0043); any other problem with a local copy is reported.
  const bool only_in_image = !manifest.ok() && manifest.status().reason() == "PluginNotFound" &&
                             (spec.image.has_value() || out.plugin_published);
  if (!manifest.ok() && !only_in_image) {
    return fail(manifest.status().reason(), manifest.status().message());
  }
  if (manifest.ok() && out.machine_kinds.empty()) {
    for (const auto& gvk : manifest->infrastructure) {
      out.machine_kinds.push_back(api::InfrastructureKind{gvk.group + "/" + gvk.version, gvk.kind});
    }
    if (out.machine_kinds.empty()) {
      return fail("NoInfrastructureKind",
                  "plugin " + manifest->file.string() + " declares no infrastructure kind");
    }
  }
  if (!out.machine_kinds.empty()) out.machine_kind = out.machine_kinds.front();
  if (!cluster_role_exists) {
    std::string role = backendClusterRoleName(spec.backend);
    return fail("MissingClusterRole",
                "ClusterRole " + role +
                    " does not exist: `banlieue bootstrap operator` installs it for the plugins "
                    "in banlieue's image; a third party's plugin ships it beside its CRDs "
                    "(`banlieue plugin manifests`; docs/provider-contract.md, section 10.1)");
  }
  if (spec.deployment == "External" && hasPodFields(spec)) {
    return fail("PodFieldsOnExternal",
                "an External class runs no Deployment: image, replicas, resources, "
                "nodeSelector, tolerations and workloadNamespace must be left out");
  }
  if (auto s = validateClassForWorkload(provider_class); !s.isOk()) {
    return fail(s.reason(), s.message());
  }
  out.ready = true;
  out.reason = "Ready";
  out.message = "class is usable";
  return out;
}

}  // namespace banlieue::roles::provider_operator
