#include "host/plugin/loader.h"

#include "host/common/logging.h"
#include "host/plugin/elf_exports.h"
#include "host/plugin/file_checks.h"
#include "host/plugin/sha256.h"

// std::filesystem instead of Boost.Filesystem: keeps Boost.DLL header-only for us.
#define BOOST_DLL_USE_STD_FS 1
#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>

namespace banlieue::plugin {
namespace {

// Process-lifetime registry. A plugin's code may be referenced by a static table or still
// be on some stack, so nothing is ever dlclose'd (Boost.DLL FAQ, libvirt's RTLD_NODELETE);
// its host table and Plugin live as long.
struct LibraryRegistry {
  std::mutex load_mutex;  // loads are serialized (dlopen from one thread at a time)
  std::mutex mutex;       // guards the containers
  std::deque<boost::dll::shared_library> libraries;
  std::deque<UniqueFd> descriptors;  // what each library was mapped from, kept open
  std::deque<std::unique_ptr<HostServices>> services;
  std::map<std::pair<dev_t, ino_t>, std::shared_ptr<Plugin>> by_file;
};
LibraryRegistry& registry() {
  static auto* instance = new LibraryRegistry();  // intentionally leaked
  return *instance;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08X", v);
  return buf;
}

Status refuse(Code code, const char* reason, const std::filesystem::path& file,
              const std::string& why) {
  return error(code, reason, file.string() + ": " + why);
}

// Whether the object behind a dlopen handle is the file open as `checked`: its link-map name
// (the /proc/<pid>/fd/<n> it was opened as, or an earlier load's) names the same inode.
bool sameFile(void* handle, const OpenFile& checked) {
  struct link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) {
    return false;
  }
  struct stat loaded {};
  return ::stat(map->l_name, &loaded) == 0 && loaded.st_dev == checked.device &&
         loaded.st_ino == checked.inode;
}

// The table checks, applied to what init returned.
Status checkTable(const Manifest& m, const std::filesystem::path& lib,
                  const banlieue_provider_v1* t) {
  const auto& h = t->header;
  if (h.magic != BANLIEUE_PROVIDER_MAGIC) {
    return refuse(Code::kFailedPrecondition, "PluginBadMagic", lib,
                  "provider table has magic " + hex32(h.magic) + ", expected " +
                      hex32(BANLIEUE_PROVIDER_MAGIC) + " (not a banlieue_provider_v1 table)");
  }
  if (h.abi_major != BANLIEUE_ABI_MAJOR) {
    return refuse(Code::kFailedPrecondition, "AbiMajorMismatch", lib,
                  "provider table says ABI major " + std::to_string(h.abi_major) +
                      "; this host speaks major " + std::to_string(BANLIEUE_ABI_MAJOR) +
                      " (provider.json claims " + std::to_string(m.abi_major) + ")");
  }
  if (h.layout_fingerprint != BANLIEUE_V1_LAYOUT_FINGERPRINT) {
    return refuse(Code::kFailedPrecondition, "PluginLayoutMismatch", lib,
                  "layout fingerprint " + hex32(h.layout_fingerprint) +
                      " differs from the host's " + hex32(BANLIEUE_V1_LAYOUT_FINGERPRINT) +
                      " (built for another platform or with different packing)");
  }
  // Everything up to and including provider_version is required in every v1 table.
  size_t minimum = offsetof(banlieue_provider_v1, provider_version) + sizeof(t->provider_version);
  if (h.struct_size < minimum) {
    return refuse(Code::kFailedPrecondition, "PluginTableTooShort", lib,
                  "provider table is " + std::to_string(h.struct_size) + " bytes; at least " +
                      std::to_string(minimum) + " are required");
  }
  if (t->name == nullptr || m.name != t->name) {
    return refuse(Code::kFailedPrecondition, "PluginNameMismatch", lib,
                  "plugin calls itself '" + std::string(t->name ? t->name : "(null)") +
                      "' but provider.json names it '" + m.name + "'");
  }
  return Status::ok();
}

}  // namespace

size_t loadedLibraryCount() {
  std::lock_guard lock(registry().mutex);
  return registry().libraries.size();
}

PluginLoader::PluginLoader(LoadOptions options) : options_(std::move(options)) {}

StatusOr<std::shared_ptr<Plugin>> PluginLoader::load(const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    return error(Code::kInvalidArgument, "InvalidPluginName",
                 "plugin name '" + name + "' must be a directory name under " +
                     options_.plugin_root.string());
  }
  return loadDirectory(options_.plugin_root / name);
}

StatusOr<std::shared_ptr<Plugin>> PluginLoader::loadDirectory(
    const std::filesystem::path& directory) const {
  std::lock_guard serialized(registry().load_mutex);
  auto log = common::logger("plugin.loader");
  std::error_code ec;
  auto root = std::filesystem::canonical(options_.plugin_root, ec);
  if (ec) {
    return error(
        Code::kNotFound, "PluginRootMissing",
        options_.plugin_root.string() + ": plugin directory root does not exist (--plugin-dir)");
  }
  auto dir = std::filesystem::canonical(directory, ec);
  if (ec) {
    return error(Code::kNotFound, "PluginDirectoryMissing",
                 directory.string() + ": does not exist");
  }
  if (!isInside(dir, root) || dir == root) {
    return error(Code::kPermissionDenied, "PluginOutsideRoot",
                 dir.string() + ": plugins load only from directories inside " + root.string());
  }
  if (options_.test_hook) options_.test_hook("resolved");
  // From here on every file is reached through a descriptor of a checked directory, never by
  // path again: a directory swapped for a symlink is refused, one swapped for another is
  // checked as itself.
  auto dir_fd = openTrustedDirectory(root, dir.lexically_relative(root));
  if (!dir_fd.ok()) return dir_fd.status();

  auto manifest = readManifestAt(dir_fd->get(), dir);
  if (!manifest.ok()) return manifest.status();
  Manifest& m = manifest.value();
  if (auto st = checkAbiCompatibility(m, BANLIEUE_ABI_MAJOR, BANLIEUE_ABI_MINOR); !st.isOk())
    return st;
  if (options_.expected_name && m.name != *options_.expected_name) {
    return error(Code::kFailedPrecondition, "BackendMismatch",
                 m.file.string() + ": names the plugin '" + m.name + "' but backend '" +
                     *options_.expected_name + "' is expected here; refusing to load it");
  }

  auto lib = m.libraryPath();
  auto file = openTrustedFileAt(dir_fd->get(), dir, m.library, "library named by provider.json");
  if (!file.ok()) return file.status();
  OpenFile& opened = file.value();

  struct Pin {
    std::string who;
    const std::optional<std::string>& digest;
  };
  std::optional<std::string> digest;
  for (const Pin& pin :
       {Pin{"provider.json pins", m.sha256},
        Pin{options_.expected_sha256_source + " pins", options_.expected_sha256}}) {
    if (!pin.digest) continue;
    if (!digest) {
      auto hashed = sha256Fd(opened.fd.get());
      if (!hashed.ok()) return hashed.status();
      digest = *hashed;
    }
    if (*digest != *pin.digest) {
      return refuse(
          Code::kPermissionDenied, "PluginChecksumMismatch", lib,
          "sha256 is " + *digest + " but " + pin.who + " " + *pin.digest + "; refusing to load");
    }
  }

  {
    std::lock_guard lock(registry().mutex);
    auto existing = registry().by_file.find({opened.device, opened.inode});
    if (existing != registry().by_file.end()) {
      if (existing->second->manifest().name != m.name) {
        return refuse(
            Code::kFailedPrecondition, "PluginNameMismatch", lib,
            "this library is already loaded as plugin '" + existing->second->manifest().name + "'");
      }
      return existing->second;  // init runs once per process
    }
  }

  // The entry point, from the dynamic symbol table of the checked descriptor: a library that
  // cannot be a plugin is refused before its constructors could run.
  auto exports = exportedSymbols(opened.fd.get(), lib);
  if (!exports.ok()) return exports.status();
  if (!std::binary_search(exports->begin(), exports->end(),
                          std::string(BANLIEUE_PROVIDER_V1_INIT_SYMBOL))) {
    return refuse(
        Code::kFailedPrecondition, "PluginEntryMissing", lib,
        "does not export banlieue_provider_v1_init; build it with banlieue_provider_plugin() "
        "and BANLIEUE_PROVIDER_PLUGIN()");
  }

  if (options_.test_hook) options_.test_hook("verified");
  // dlopen the descriptor, not the path: /proc/<pid>/fd/<n> opens the inode it holds, whatever
  // the path names now. The pid rather than "self" keeps the name the link map records valid
  // for a debugger or a sanitizer's symbolizer (other processes); the descriptor stays open
  // for as long as the library is mapped, so the name never points at anything else.
  std::string mapped_as =
      "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(opened.fd.get());
  boost::dll::shared_library library;
  try {
    library.load(mapped_as, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return refuse(Code::kFailedPrecondition, "PluginLoadFailed", lib,
                  std::string("dlopen of ") + mapped_as + " (needs /proc) failed: " + e.what());
  }
  // Defense in depth: the object dlopen returned (a new one, or one already mapped from the
  // same inode) is backed by the inode that was checked.
  bool same_file = sameFile(library.native(), opened);
  const boost::dll::shared_library* loaded = nullptr;
  {
    std::lock_guard lock(registry().mutex);
    loaded = &registry().libraries.emplace_back(std::move(library));
    registry().descriptors.push_back(std::move(opened.fd));
  }
  if (!same_file) {
    return refuse(Code::kPermissionDenied, "PluginChangedWhileLoading", lib,
                  "dlopen returned an object that is not the file checked; refusing to use it");
  }
  if (!loaded->has(BANLIEUE_PROVIDER_V1_INIT_SYMBOL)) {
    return refuse(Code::kFailedPrecondition, "PluginEntryMissing", lib,
                  "the loaded library does not export banlieue_provider_v1_init");
  }
  auto init = loaded->get<std::remove_pointer_t<banlieue_provider_v1_init_fn>>(
      BANLIEUE_PROVIDER_V1_INIT_SYMBOL);

  HostServices* services = nullptr;
  {
    std::lock_guard lock(registry().mutex);
    services = registry().services.emplace_back(std::make_unique<HostServices>(m.name)).get();
  }
  sdk::abi::StringSink init_error(sdk::abi::kMaxMessageBytes);
  banlieue_sink error_sink = init_error.sink();
  const banlieue_provider_v1* table = init(services->table(), BANLIEUE_ABI_MINOR, &error_sink);
  if (table == nullptr) {
    return refuse(
        Code::kFailedPrecondition, "PluginInitFailed", lib,
        "banlieue_provider_v1_init refused: " +
            (init_error.text().empty() ? std::string("(no message)") : init_error.text()));
  }
  if (auto st = checkTable(m, lib, table); !st.isOk()) return st;

  sdk::abi::ProviderClient client(table);
  log->info("loaded plugin {} {} from {} as {} (ABI {}.{}, table {} bytes)", m.name,
            table->provider_version ? table->provider_version : "?", lib.string(), mapped_as,
            table->header.abi_major, table->header.abi_minor, table->header.struct_size);
  auto plugin = std::make_shared<Plugin>(std::move(m), client, services);
  std::lock_guard lock(registry().mutex);
  registry().by_file[{opened.device, opened.inode}] = plugin;
  return plugin;
}

}  // namespace banlieue::plugin
