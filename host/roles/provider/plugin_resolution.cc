#include "host/roles/provider/plugin_resolution.h"

#include "host/plugin/loader.h"
#include "host/plugin/plugin_path.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {

namespace json = sdk::json;

StatusOr<ResolvedPlugin> resolvePlugin(kube::KubeClient& client, const std::string& backend,
                                       const std::string& provider_namespace,
                                       const std::string& provider_name,
                                       const std::filesystem::path& plugin_dir) {
  auto provider = client.get(kProviderType, provider_namespace, provider_name);
  if (!provider.ok()) {
    if (provider.status().code() == Code::kNotFound) {
      return error(Code::kNotFound, "ProviderNotFound",
                   "Provider " + provider_namespace + "/" + provider_name + " does not exist");
    }
    return provider.status();
  }
  std::string class_name = json::stringOr(&*provider, "spec.providerClassRef.name");
  auto provider_class = client.get(kProviderClassType, "", class_name);
  if (!provider_class.ok()) {
    if (provider_class.status().code() == Code::kNotFound) {
      return error(Code::kFailedPrecondition, "ProviderClassNotFound",
                   "ProviderClass " + class_name + " does not exist");
    }
    return provider_class.status();
  }
  std::string class_backend = json::stringOr(&*provider_class, "spec.backend");
  if (class_backend != backend) {
    return error(Code::kFailedPrecondition, "BackendMismatch",
                 "ProviderClass " + class_name + " is for backend '" + class_backend +
                     "' but this provider process runs '" + backend + "'");
  }
  std::string path = json::stringOr(&*provider_class, "spec.plugin.path", backend);
  auto directory = plugin::resolvePluginPath(plugin_dir, path);
  if (!directory.ok()) return directory.status();
  plugin::PluginLoader loader({.plugin_root = plugin_dir});
  auto loaded = loader.loadDirectory(*directory);
  if (!loaded.ok()) return loaded.status();
  if ((*loaded)->manifest().name != backend) {
    return error(Code::kFailedPrecondition, "BackendMismatch",
                 directory->string() + " holds plugin '" + (*loaded)->manifest().name + "', not '" +
                     backend + "'");
  }
  std::string image;
  if (json::stringOr(&*provider_class, "spec.deployment", "Managed") != "External") {
    image = json::stringOr(&*provider_class, "spec.image.repository");
    std::string tag = json::stringOr(&*provider_class, "spec.image.tag");
    std::string digest = json::stringOr(&*provider_class, "spec.image.digest");
    if (!image.empty() && !tag.empty()) image += ":" + tag;
    if (!image.empty() && !digest.empty()) image += "@" + digest;
  }
  return ResolvedPlugin{std::move(*loaded), class_name, *directory, image};
}

}  // namespace banlieue::roles::provider
