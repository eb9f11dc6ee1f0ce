#include "host/plugin/manifest.h"

#include <banlieue/sdk/json.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace banlieue::plugin {
namespace {

namespace json = sdk::json;

Status invalid(const Manifest& m, const std::string& detail) {
  return error(Code::kInvalidArgument, "InvalidManifest", m.file.string() + ": " + detail);
}

bool isDnsLabel(const std::string& s) {
  static const std::regex label("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  return s.size() <= 63 && std::regex_match(s, label);
}

}  // namespace

StatusOr<Manifest> readManifest(const std::filesystem::path& directory) {
  Manifest m;
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    return error(
        Code::kNotFound, "PluginDirectoryMissing",
        directory.string() + ": not a plugin directory (it does not exist or is not a directory)");
  }
  m.directory = std::filesystem::canonical(directory, ec);
  m.file = m.directory / kManifestFile;
  std::ifstream in(m.file);
  if (!in) {
    return error(
        Code::kNotFound, "ManifestMissing",
        m.file.string() + ": missing; every plugin directory needs a provider.json manifest");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  m.raw_json = buffer.str();

  rapidjson::Document doc;
  try {
    doc = json::parse(m.raw_json, m.file.string());
  } catch (const sdk::Error& e) {
    return error(Code::kInvalidArgument, "InvalidManifest", e.what());
  }
  if (!doc.IsObject()) return invalid(m, "must be a JSON object");

  m.manifest_version = static_cast<int>(json::integer(&doc, "manifestVersion").value_or(0));
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
  auto major = json::integer(&doc, "abi.major");
  if (!major) return invalid(m, "field 'abi.major' is missing");
  m.abi_major = static_cast<int>(*major);
  m.abi_minor_required = static_cast<int>(json::integer(&doc, "abi.minorRequired").value_or(0));
  if (m.abi_minor_required < 0) return invalid(m, "field 'abi.minorRequired' must not be negative");
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
      if (rel.find("..") != std::string::npos || (!rel.empty() && rel[0] == '/')) {
        return invalid(m, "samples." + std::string(s.name.GetString()) +
                              " must stay inside the plugin directory");
      }
      m.samples[s.name.GetString()] = rel;
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
