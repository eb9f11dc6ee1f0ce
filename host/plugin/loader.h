// Loads provider plugins from the plugin directory, and only from there.
//
// Order of checks, each refusal a specific error naming the file: the directory lies inside
// the plugin root and neither is writable by group or others; provider.json is a regular
// file that parses and whose ABI major/minor fit this host; the library is a regular file
// (not a symlink) in the directory, owned by root or us and not writable by others; its
// sha256 matches the pins (manifest, operator); dlopen(RTLD_NOW|RTLD_LOCAL) succeeds and
// loaded the very file that was checked (same device and inode);
// it exports banlieue_provider_v1_init; init accepts our host table; the returned table has
// the right magic, major and fingerprint, at least the 1.0 header fields, and the
// manifest's name. Loads are serialized; a library already loaded is returned as is
// (init runs once per process); nothing is ever unloaded.
#pragma once

#include "host/common/status_or.h"
#include "host/plugin/plugin.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace banlieue::plugin {

inline constexpr const char* kDefaultPluginRoot = "/usr/lib/banlieue/plugins";

struct LoadOptions {
  // Only directories under this root are loaded (after resolving symlinks).
  std::filesystem::path plugin_root = kDefaultPluginRoot;
  // An operator-side pin (e.g. from the ProviderClass); checked besides the manifest's own.
  std::optional<std::string> expected_sha256;
  // Tests only: called at fixed points of a load so a test can change the file system there
  // and prove the loader does not care. "resolved": the paths are canonical and nothing is
  // opened yet; "verified": every check before dlopen has passed.
  std::function<void(std::string_view stage)> test_hook;
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
