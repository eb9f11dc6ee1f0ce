#include "host/plugin/plugin_path.h"

#include "host/plugin/file_checks.h"
#include "host/plugin/manifest.h"

#include <system_error>

namespace banlieue::plugin {

StatusOr<std::filesystem::path> resolvePluginPath(const std::filesystem::path& plugin_root,
                                                  const std::string& path) {
  if (path.empty()) {
    return error(Code::kInvalidArgument, "PluginPathInvalid", "spec.plugin.path is empty");
  }
  std::filesystem::path requested(path);
  for (const auto& part : requested) {
    if (part == "..") {
      return error(Code::kInvalidArgument, "PluginPathInvalid",
                   "spec.plugin.path '" + path + "' contains '..'");
    }
  }
  std::error_code ec;
  auto root = std::filesystem::canonical(plugin_root, ec);
  if (ec) {
    return error(Code::kNotFound, "PluginNotFound",
                 "plugin directory " + plugin_root.string() + ": " + ec.message());
  }
  auto joined = requested.is_absolute() ? requested : root / requested;
  // canonical() follows every symlink, so a link pointing out of the root is caught here.
  auto resolved = std::filesystem::canonical(joined, ec);
  if (ec) {
    return error(Code::kNotFound, "PluginNotFound",
                 "spec.plugin.path '" + path + "': " + ec.message());
  }
  if (!isInside(resolved, root) || resolved == root) {
    return error(Code::kPermissionDenied, "PluginPathEscapes",
                 "spec.plugin.path '" + path + "' resolves to " + resolved.string() +
                     ", outside the plugin directory " + root.string());
  }
  if (std::filesystem::is_directory(resolved, ec)) return resolved;
  // A .so: accepted as the library its directory's manifest names.
  auto directory = resolved.parent_path();
  if (directory == root) {
    return error(Code::kPermissionDenied, "PluginPathEscapes",
                 "spec.plugin.path '" + path +
                     "' names a file directly in the plugin "
                     "directory; plugins live in their own sub-directory with provider.json");
  }
  auto manifest = readManifest(directory);
  if (!manifest.ok()) {
    return error(Code::kNotFound, "PluginNotFound",
                 "spec.plugin.path '" + path + "': " + manifest.status().message());
  }
  if (manifest->libraryPath() != resolved) {
    return error(Code::kNotFound, "PluginNotFound",
                 "spec.plugin.path '" + path + "' is not the library " + manifest->file.string() +
                     " names (" + manifest->library + ")");
  }
  return directory;
}

}  // namespace banlieue::plugin
