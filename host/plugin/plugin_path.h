// ProviderClass spec.plugin.path as the provider runtime must treat it: a path inside the
// provider image naming a plugin directory (holding provider.json) or its .so. It is accepted
// only when it resolves inside the runtime's configured plugin directory, so a ProviderClass
// author cannot make the runtime load arbitrary code from elsewhere in the image.
#pragma once

#include "host/common/status_or.h"

#include <filesystem>
#include <string>

namespace banlieue::plugin {

// The plugin directory `path` names. Relative paths are taken from `plugin_root`. Refusals
// carry a CamelCase reason for the ProviderClass/Provider condition:
//   PluginPathInvalid  empty, or contains a ".." component
//   PluginPathEscapes  resolves (symlinks included) outside plugin_root, or to the root itself
//   PluginNotFound     nothing there, or a file that is not the directory's provider.json
//                      library
StatusOr<std::filesystem::path> resolvePluginPath(const std::filesystem::path& plugin_root,
                                                  const std::string& path);

}  // namespace banlieue::plugin
