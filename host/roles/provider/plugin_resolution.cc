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
  // The class's pin and the backend name are checked by the loader before any plugin code
  // runs (docs/adr/0025).
  plugin::LoadOptions options{.plugin_root = plugin_dir, .expected_name = backend};
  if (const auto* pin = json::find(&*provider_class, "spec.plugin.sha256");
      pin != nullptr && pin->IsString() && pin->GetStringLength() > 0) {
    options.expected_sha256 = pin->GetString();
    options.expected_sha256_source = "ProviderClass " + class_name + " spec.plugin.sha256";
  }
  auto loaded = plugin::PluginLoader(options).loadDirectory(*directory);
  if (!loaded.ok()) return loaded.status();
  std::string image;
  if (json::stringOr(&*provider_class, "spec.deployment", "Managed") != "External") {
    image = json::stringOr(&*provider_class, "spec.image.repository");
    std::string tag = json::stringOr(&*provider_class, "spec.image.tag");
    std::string digest = json::stringOr(&*provider_class, "spec.image.digest");
    if (!image.empty() && !tag.empty()) image += ":" + tag;
    if (!image.empty() && !digest.empty()) image += "@" + digest;
  }
  return ResolvedPlugin{std::move(*loaded),
                        class_name,
                        *directory,
                        image,
                        options.expected_sha256.value_or(""),
                        json::integer(&*provider_class, "metadata.generation").value_or(0)};
}

}  // namespace banlieue::roles::provider
