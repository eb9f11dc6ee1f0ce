// Loads provider plugins from the plugin directory, and only from there.
//
// Order of checks, each refusal a specific error naming the file: the directory lies inside
// the plugin root; provider.json parses and its ABI major/minor fit this host; the library
// is a regular file in the directory; its sha256 matches the pin (manifest or operator);
// dlopen(RTLD_NOW|RTLD_LOCAL) succeeds; it exports banlieue_provider_v1_init; init accepts
// our host table; the returned table has the right magic, major, fingerprint and a sane
// size; its name matches the manifest. Libraries are never unloaded.
#pragma once

#include "host/common/status_or.h"
#include "host/plugin/plugin.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace banlieue::plugin {

inline constexpr const char* kDefaultPluginRoot = "/usr/lib/banlieue/plugins";

struct LoadOptions {
  // Only directories under this root are loaded (after resolving symlinks).
  std::filesystem::path plugin_root = kDefaultPluginRoot;
  // An operator-side pin (e.g. from the ProviderClass); checked besides the manifest's own.
  std::optional<std::string> expected_sha256;
  // The host minor offered to the plugin; tests lower it to act as an older host.
  int host_minor = BANLIEUE_ABI_MINOR;
};

class PluginLoader {
 public:
  explicit PluginLoader(LoadOptions options);

  // Loads <root>/<name>.
  StatusOr<std::shared_ptr<Plugin>> load(const std::string& name) const;
  // Loads a directory given by path; it must still resolve to a place inside the root.
  StatusOr<std::shared_ptr<Plugin>> loadDirectory(const std::filesystem::path& directory) const;

  const LoadOptions& options() const { return options_; }

 private:
  LoadOptions options_;
};

// Number of libraries this process has opened (they stay open until exit).
size_t loadedLibraryCount();

}  // namespace banlieue::plugin
