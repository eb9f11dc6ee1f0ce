// provider.json: what the host learns about a plugin before running any of its code.
#pragma once

#include "host/common/status_or.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::plugin {

inline constexpr const char* kManifestFile = "provider.json";

struct GroupVersionKind {
  std::string group;
  std::string version;
  std::string kind;
  bool operator==(const GroupVersionKind&) const = default;
  std::string str() const { return group + "/" + version + ", Kind=" + kind; }
};

struct Manifest {
  std::filesystem::path directory;  // the plugin directory (absolute, canonical)
  std::filesystem::path file;       // directory / provider.json
  int manifest_version = 1;
  std::string name;     // backend name, e.g. "libvirt"
  std::string library;  // file name of the .so inside directory
  int abi_major = 0;
  int abi_minor_required = 0;
  std::string provider_version;
  std::vector<GroupVersionKind> infrastructure;  // infra kinds the plugin serves
  std::optional<std::string> sha256;             // pin of the library's content
  std::map<std::string, std::string> samples;    // kind -> relative path of a sample object
  std::vector<std::string> crds;                 // relative paths of the plugin's own CRDs
  std::string raw_json;                          // the file as read

  std::filesystem::path libraryPath() const { return directory / library; }
};

// Reads and checks <directory>/provider.json. Every error names the file and the field.
StatusOr<Manifest> readManifest(const std::filesystem::path& directory);

// The same, reading provider.json through the directory already open as `directory_fd`;
// `directory` (absolute, canonical) is what the manifest and its errors name.
StatusOr<Manifest> readManifestAt(int directory_fd, const std::filesystem::path& directory);

// Checks the text of a provider.json already read (at most 1 MiB) for the plugin directory
// `directory`; readManifestAt reads the file and calls this.
StatusOr<Manifest> parseManifest(std::string raw_json, const std::filesystem::path& directory);

// Checks the manifest against this host's ABI (major equal, minorRequired not above ours).
Status checkAbiCompatibility(const Manifest& manifest, int host_major, int host_minor);

}  // namespace banlieue::plugin
