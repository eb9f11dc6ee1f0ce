#include "host/plugin/manifest.h"

#include <banlieue/sdk/json.h>

#include "host/plugin/file_checks.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <regex>

namespace banlieue::plugin {
namespace {

namespace json = sdk::json;

Status invalid(const Manifest& m, const std::string& detail) {
  return error(Code::kInvalidArgument, "InvalidManifest", m.file.string() + ": " + detail);
}

constexpr off_t kMaxManifestBytes = 1 << 20;

// An integer field that must fit `int` and lie in [min, max]; nullopt when absent.
StatusOr<std::optional<int>> boundedInt(const Manifest& m, const rapidjson::Value& doc,
                                        std::string_view path, int64_t min, int64_t max) {
  const rapidjson::Value* v = json::find(&doc, path);
  if (v == nullptr) return std::optional<int>();
  if (!v->IsInt64() || v->GetInt64() < min || v->GetInt64() > max) {
    return invalid(m, "field '" + std::string(path) + "' must be an integer from " +
                          std::to_string(min) + " to " + std::to_string(max));
  }
  return std::optional<int>(static_cast<int>(v->GetInt64()));
}

bool isSafeRelativePath(const std::string& rel) {
  if (rel.empty() || rel[0] == '/') return false;
  for (const auto& part : std::filesystem::path(rel)) {
    if (part == "..") return false;
  }
  return true;
}

bool isDnsLabel(const std::string& s) {
  static const std::regex label("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  return s.size() <= 63 && std::regex_match(s, label);
}

}  // namespace

StatusOr<Manifest> readManifest(const std::filesystem::path& directory) {
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    return error(
        Code::kNotFound, "PluginDirectoryMissing",
        directory.string() + ": not a plugin directory (it does not exist or is not a directory)");
  }
  auto canonical = std::filesystem::canonical(directory, ec);
  UniqueFd fd(::open(canonical.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    return error(Code::kNotFound, "PluginDirectoryMissing",
                 canonical.string() + ": " + std::strerror(errno));
  }
  return readManifestAt(fd.get(), canonical);
}

StatusOr<Manifest> readManifestAt(int directory_fd, const std::filesystem::path& directory) {
  Manifest m;
  m.directory = directory;
  m.file = m.directory / kManifestFile;
  // Read through a checked descriptor: no symlink out of the directory, no FIFO or device,
  // and a size cap so a hostile manifest cannot exhaust memory.
  auto opened = openTrustedFileAt(directory_fd, m.directory, kManifestFile, "manifest");
  if (!opened.ok()) {
    if (opened.status().reason() == "PluginFileMissing") {
      return error(
          Code::kNotFound, "ManifestMissing",
          m.file.string() + ": missing; every plugin directory needs a provider.json manifest");
    }
    return opened.status();
  }
  if (opened->size > kMaxManifestBytes) {
    return invalid(m, "is " + std::to_string(opened->size) + " bytes; a manifest may be at most " +
                          std::to_string(kMaxManifestBytes));
  }
  std::string raw_json(static_cast<size_t>(opened->size), '\0');
  ssize_t got = ::pread(opened->fd.get(), raw_json.data(), raw_json.size(), 0);
  if (got != static_cast<ssize_t>(raw_json.size())) return invalid(m, "could not be read in full");
  return parseManifest(std::move(raw_json), directory);
}

StatusOr<Manifest> parseManifest(std::string raw_json, const std::filesystem::path& directory) {
  Manifest m;
  m.directory = directory;
  m.file = m.directory / kManifestFile;
  m.raw_json = std::move(raw_json);
  rapidjson::Document doc;
  try {
    doc = json::parse(m.raw_json, m.file.string());
  } catch (const sdk::Error& e) {
    return error(Code::kInvalidArgument, "InvalidManifest", e.what());
  }
  if (!doc.IsObject()) return invalid(m, "must be a JSON object");

  auto version = boundedInt(m, doc, "manifestVersion", 0, 1000);
  if (!version.ok()) return version.status();
  m.manifest_version = version->value_or(0);
  if (m.manifest_version != 1) {
    return invalid(
        m, "field 'manifestVersion' must be 1 (got " + std::to_string(m.manifest_version) + ")");
  }
  auto name = json::string(&doc, "name");
  if (!name) return invalid(m, "field 'name' is missing");
  m.name = std::string(*name);
  if (!isDnsLabel(m.name)) {
    return invalid(m, "field 'name' must be a DNS label (lowercase letters, digits, '-'), got '" +
                          m.name + "'");
  }
  auto library = json::string(&doc, "library");
  if (!library || library->empty()) return invalid(m, "field 'library' is missing");
  m.library = std::string(*library);
  // Only a plain file name: a manifest must not point the host outside its directory.
  if (m.library.find('/') != std::string::npos || m.library == "." || m.library == "..") {
    return invalid(m, "field 'library' must be a file name inside the plugin directory, got '" +
                          m.library + "'");
  }
  auto major = boundedInt(m, doc, "abi.major", 1, 65535);
  if (!major.ok()) return major.status();
  if (!major->has_value()) return invalid(m, "field 'abi.major' is missing");
  m.abi_major = **major;
  auto minor = boundedInt(m, doc, "abi.minorRequired", 0, 65535);
  if (!minor.ok()) return minor.status();
  m.abi_minor_required = minor->value_or(0);
  m.provider_version = json::stringOr(&doc, "providerVersion");
  if (m.provider_version.empty()) return invalid(m, "field 'providerVersion' is missing");

  const rapidjson::Value* infra = json::member(&doc, "infrastructure");
  if (infra == nullptr || !infra->IsArray()) {
    return invalid(m, "field 'infrastructure' must list the kinds the plugin serves");
  }
  for (rapidjson::SizeType i = 0; i < infra->Size(); ++i) {
    const rapidjson::Value& entry = (*infra)[i];
    GroupVersionKind gvk{json::stringOr(&entry, "group"), json::stringOr(&entry, "version"),
                         json::stringOr(&entry, "kind")};
    if (gvk.group.empty() || gvk.version.empty() || gvk.kind.empty()) {
      return invalid(m, "infrastructure[" + std::to_string(i) + "] needs group, version and kind");
    }
    m.infrastructure.push_back(std::move(gvk));
  }
  if (auto sha = json::string(&doc, "sha256")) {
    static const std::regex hex("^[0-9a-f]{64}$");
    std::string pin(*sha);
    if (!std::regex_match(pin, hex)) {
      return invalid(m, "field 'sha256' must be 64 lowercase hex digits");
    }
    m.sha256 = pin;
  }
  if (const rapidjson::Value* samples = json::member(&doc, "samples");
      samples && samples->IsObject()) {
    for (const auto& s : samples->GetObject()) {
      if (!s.value.IsString())
        return invalid(m, "samples." + std::string(s.name.GetString()) + " must be a path");
      std::string rel = s.value.GetString();
      if (!isSafeRelativePath(rel)) {
        return invalid(m, "samples." + std::string(s.name.GetString()) +
                              " must stay inside the plugin directory");
      }
      m.samples[s.name.GetString()] = rel;
    }
  }
  if (const rapidjson::Value* crds = json::member(&doc, "crds"); crds != nullptr) {
    if (!crds->IsArray()) {
      return invalid(m,
                     "field 'crds' must be a list of CRD file paths inside the plugin "
                     "directory, e.g. [\"crds/machines.yaml\"]");
    }
    for (const auto& c : crds->GetArray()) {
      if (!c.IsString() || !isSafeRelativePath(c.GetString())) {
        return invalid(m, "crds[] entries must be relative paths inside the plugin directory");
      }
      m.crds.emplace_back(c.GetString());
    }
  }
  return m;
}

Status checkAbiCompatibility(const Manifest& m, int host_major, int host_minor) {
  if (m.abi_major != host_major) {
    return error(Code::kFailedPrecondition, "AbiMajorMismatch",
                 m.file.string() + ": plugin '" + m.name + "' needs ABI major " +
                     std::to_string(m.abi_major) + "; this host speaks major " +
                     std::to_string(host_major));
  }
  if (m.abi_minor_required > host_minor) {
    return error(Code::kFailedPrecondition, "AbiMinorTooNew",
                 m.file.string() + ": plugin '" + m.name + "' needs ABI " +
                     std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor_required) +
                     " or later; this host implements " + std::to_string(host_major) + "." +
                     std::to_string(host_minor) + " (upgrade banlieue or use an older plugin)");
  }
  return Status::ok();
}

}  // namespace banlieue::plugin
