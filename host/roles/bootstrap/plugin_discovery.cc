#include "host/roles/bootstrap/plugin_discovery.h"

#include "host/api/kinds.h"
#include "host/api/yaml.h"
#include "host/plugin/file_checks.h"

#include <banlieue/sdk/json.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <system_error>

namespace banlieue::roles::bootstrap {
namespace {

namespace json = sdk::json;
constexpr off_t kMaxCrdBytes = 4 << 20;  // the apiserver's own request limit is 3 MiB

Status invalidCrd(const std::string& source, const std::string& what) {
  return error(Code::kInvalidArgument, "InvalidPluginCrd", source + ": " + what);
}

StatusOr<std::string> readPluginFile(const plugin::Manifest& manifest, const std::string& rel) {
  std::filesystem::path relative(rel);
  std::error_code ec;
  auto parent = std::filesystem::weakly_canonical(manifest.directory / relative.parent_path(), ec);
  if (ec || !plugin::isInside(parent, manifest.directory)) {
    return error(Code::kPermissionDenied, "PluginFileOutside",
                 (manifest.directory / relative).string() +
                     ": resolves outside the plugin directory; refusing to read it");
  }
  auto opened = plugin::openTrustedFile(parent, relative.filename().string(), "CRD file");
  if (!opened.ok()) return opened.status();
  if (opened->size > kMaxCrdBytes) {
    return error(Code::kInvalidArgument, "PluginFileTooLarge",
                 (parent / relative.filename()).string() + ": is larger than 4 MiB");
  }
  std::string text(static_cast<size_t>(opened->size), '\0');
  if (::pread(opened->fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return error(Code::kUnavailable, "PluginFileUnreadable",
                 (parent / relative.filename()).string() + ": could not be read in full");
  }
  return text;
}

// Every infrastructure kind the plugin serves that banlieue does not define needs the
// plugin's own CRD; without it the kind cannot exist in the cluster.
Status checkEveryKindHasACrd(const DiscoveredPlugin& plugin) {
  const auto& manifest = plugin.manifest;
  for (const auto& gvk : manifest.infrastructure) {
    bool builtin =
        std::any_of(api::builtinKinds().begin(), api::builtinKinds().end(),
                    [&](const auto& k) { return k.group == gvk.group && k.kind == gvk.kind; });
    if (builtin) continue;
    bool shipped = std::any_of(plugin.crds.begin(), plugin.crds.end(), [&](const auto& crd) {
      const auto* spec = json::member(&crd, "spec");
      return json::stringOr(spec, "group") == gvk.group &&
             json::stringOr(json::member(spec, "names"), "kind") == gvk.kind;
    });
    if (shipped) continue;
    std::string files;
    for (const auto& rel : manifest.crds) files += (files.empty() ? "" : ", ") + rel;
    return error(Code::kInvalidArgument, "PluginCrdMissing",
                 manifest.file.string() + ": plugin '" + manifest.name + "' serves " + gvk.kind +
                     "." + gvk.group + ", which banlieue does not define, but " +
                     (files.empty() ? std::string("its 'crds' lists no CRD file")
                                    : "none of its CRD files (" + files + ") defines it") +
                     "; ship an apiextensions.k8s.io/v1 CRD for it and list it in 'crds'");
  }
  return Status::ok();
}

}  // namespace

Status validatePluginCrd(const plugin::Manifest& manifest, const rapidjson::Value& crd,
                         const std::string& source) {
  if (json::stringOr(&crd, "apiVersion") != "apiextensions.k8s.io/v1" ||
      json::stringOr(&crd, "kind") != "CustomResourceDefinition") {
    return invalidCrd(source, "must be an apiextensions.k8s.io/v1 CustomResourceDefinition");
  }
  const auto* spec = json::member(&crd, "spec");
  const auto* names = json::member(spec, "names");
  std::string group = json::stringOr(spec, "group");
  std::string kind = json::stringOr(names, "kind");
  std::string plural = json::stringOr(names, "plural");
  if (group.empty() || kind.empty() || plural.empty()) {
    return invalidCrd(source, "needs spec.group, spec.names.kind and spec.names.plural");
  }
  if (json::stringOr(json::member(&crd, "metadata"), "name") != plural + "." + group) {
    return invalidCrd(source, "metadata.name must be " + plural + "." + group);
  }
  for (const auto& builtin : api::builtinKinds()) {
    if (builtin.group == group && builtin.kind == kind) {
      std::string what = "redefines banlieue's own kind ";
      what += kind;
      what += '.';
      what += group;
      return invalidCrd(source, what);
    }
  }
  if (group == api::kGroup) {
    return invalidCrd(source, "group banlieue.io is reserved for banlieue's own kinds");
  }
  bool served =
      std::any_of(manifest.infrastructure.begin(), manifest.infrastructure.end(),
                  [&](const auto& gvk) { return gvk.group == group && gvk.kind == kind; });
  if (!served) {
    return invalidCrd(source, "defines " + kind + "." + group +
                                  ", which provider.json's "
                                  "'infrastructure' does not list; a plugin ships CRDs only for "
                                  "kinds it serves");
  }
  return Status::ok();
}

StatusOr<DiscoveredPlugin> discoverPlugin(const std::filesystem::path& dir) {
  auto manifest = plugin::readManifest(dir);
  if (!manifest.ok()) return manifest.status();
  DiscoveredPlugin found{std::move(manifest).value(), {}, {}};
  for (const auto& rel : found.manifest.crds) {
    auto text = readPluginFile(found.manifest, rel);
    if (!text.ok()) return text.status();
    std::string source = (found.manifest.directory / rel).string();
    auto docs = api::parseYamlDocuments(*text, source);
    if (!docs.ok()) return docs.status();
    for (auto& doc : *docs) {
      if (auto s = validatePluginCrd(found.manifest, doc, source); !s.isOk()) return s;
      found.crds.push_back(std::move(doc));
      found.crd_sources.push_back(source);
    }
  }
  if (auto s = checkEveryKindHasACrd(found); !s.isOk()) return s;
  return found;
}

StatusOr<std::vector<DiscoveredPlugin>> discoverPlugins(const std::filesystem::path& plugin_dir,
                                                        const DiscoveryOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(plugin_dir, ec)) {
    if (options.missing_ok) return std::vector<DiscoveredPlugin>{};
    return error(Code::kNotFound, "PluginDirectoryMissing",
                 plugin_dir.string() + ": plugin directory does not exist");
  }
  auto root = std::filesystem::canonical(plugin_dir, ec);
  if (ec) {
    return error(Code::kNotFound, "PluginDirectoryMissing",
                 plugin_dir.string() + ": " + ec.message());
  }
  if (auto s = plugin::checkTrustedPath(root); !s.isOk()) return s;

  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    // Symlinked plugin directories are not followed: what is checked must be what runs.
    if (entry.is_directory() && !entry.is_symlink()) dirs.push_back(entry.path());
  }
  if (ec) {
    return error(Code::kUnavailable, "PluginDirectoryUnreadable",
                 root.string() + ": " + ec.message());
  }
  std::sort(dirs.begin(), dirs.end());

  std::vector<DiscoveredPlugin> plugins;
  // CRD name -> "plugin 'x' (file)", so a CRD shipped twice names both places.
  std::map<std::string, std::string> shipped_by;
  for (const auto& dir : dirs) {
    auto discovered = discoverPlugin(dir);
    if (!discovered.ok()) return discovered.status();
    DiscoveredPlugin found = std::move(discovered).value();
    for (size_t i = 0; i < found.crds.size(); ++i) {
      const auto& doc = found.crds[i];
      std::string name = json::stringOr(json::member(&doc, "metadata"), "name");
      std::string where = "plugin '" + found.manifest.name + "' (" + found.crd_sources[i] + ")";
      auto [first, inserted] = shipped_by.emplace(name, where);
      if (!inserted) {
        std::string message = "CRD " + name + " is shipped by " + first->second;
        message += " and by " + where + "; exactly one plugin may define a kind";
        return error(Code::kAlreadyExists, "DuplicatePluginCrd", message);
      }
    }
    plugins.push_back(std::move(found));
  }
  std::sort(plugins.begin(), plugins.end(),
            [](const auto& x, const auto& y) { return x.manifest.name < y.manifest.name; });
  for (size_t i = 1; i < plugins.size(); ++i) {
    if (plugins[i].manifest.name == plugins[i - 1].manifest.name) {
      return error(Code::kAlreadyExists, "DuplicatePluginName",
                   plugins[i - 1].manifest.directory.string() + " and " +
                       plugins[i].manifest.directory.string() + " both declare plugin '" +
                       plugins[i].manifest.name + "'");
    }
  }
  return plugins;
}

}  // namespace banlieue::roles::bootstrap
