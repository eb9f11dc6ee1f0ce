// Loads provider plugins from the plugin directory, and only from there (docs/adr/0025).
//
// Order of checks, each refusal a specific error naming the file. Nothing of the plugin runs
// before the last of these: the directory lies inside the plugin root; the root and every
// directory below it down to the plugin's are opened one at a time without following
// symlinks, each owned by root or us and not writable by group or others; provider.json,
// read through that descriptor, is a regular file that parses and whose ABI major/minor fit
// this host (and whose name is the expected one, when given); the library is opened once, a
// regular file (not a symlink) owned by root or us and not writable by others; its sha256,
// hashed through that descriptor, matches the pins (manifest, caller); its dynamic symbol
// table, read through that descriptor, exports banlieue_provider_v1_init. Then the very
// descriptor is dlopen'ed (as /proc/<pid>/fd/<n>, RTLD_NOW|RTLD_LOCAL), so the bytes mapped
// are the bytes checked, and the object dlopen returns is confirmed to be that inode. After
// that the plugin's code runs: its constructors, then init, which must accept our host table
// and return a table with the right magic, major and fingerprint, at least the 1.0 header
// fields, and the manifest's name. Loads are serialized; a library already loaded is
// returned as is once it passed the checks again (init runs once per process); nothing is
// ever unloaded, and the descriptor stays open as long as the library is mapped.
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
  // A pin from outside the plugin (ProviderClass spec.plugin.sha256, `plugin check --sha256`),
  // 64 lowercase hex digits; checked besides the manifest's own, before any plugin code runs.
  std::optional<std::string> expected_sha256;
  // Who set expected_sha256, as a refusal names it ("<who> pins <digest>").
  std::string expected_sha256_source = "the operator";
  // The name provider.json must give the plugin (the backend a provider process serves);
  // checked before any plugin code runs (reason BackendMismatch).
  std::optional<std::string> expected_name;
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
