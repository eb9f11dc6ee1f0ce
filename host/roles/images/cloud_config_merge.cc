#include "host/roles/images/cloud_config_merge.h"

#include "host/api/yaml.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <utility>

namespace banlieue::roles::images {
namespace {

const char* typeName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    default: return "null";
  }
}

struct Conflict {
  std::string path;
  std::string base_type;
  std::string layer_type;
};

// Merges `layer` into `base` (both maps). Returns the first conflict, if any.
std::optional<Conflict> mergeMap(YAML::Node& base, const YAML::Node& layer,
                                 const std::string& path) {
  for (const auto& entry : layer) {
    // Keys are compared as scalars: cloud-config keys are strings.
    std::string key = entry.first.Scalar();
    std::string key_path = path;
    if (!key_path.empty()) key_path += '.';
    key_path += key;
    const YAML::Node& value = entry.second;
    YAML::Node existing = base[key];
    if (!existing.IsDefined() || existing.IsNull()) {
      base[key] = YAML::Clone(value);
      continue;
    }
    if (value.IsNull()) continue;  // no opinion
    if (existing.Type() != value.Type()) {
      return Conflict{key_path, typeName(existing), typeName(value)};
    }
    if (value.IsMap()) {
      YAML::Node child = existing;
      if (auto conflict = mergeMap(child, value, key_path)) return conflict;
    } else if (value.IsSequence()) {
      for (const auto& item : value) existing.push_back(YAML::Clone(item));
    } else {
      base[key] = YAML::Clone(value);
    }
  }
  return std::nullopt;
}

// YAML allows an implicit key ("key: value") at most 1024 characters, and yaml-cpp's emitter
// writes every scalar key implicitly after escaping it (a NUL becomes the four characters
// "\x00"). A key of more bytes than a quarter of that is written as an explicit key ("? key"
// then ": value"), which has no limit (host/api/yaml.cc does the same for JSON).
constexpr size_t kMaxImplicitKeyBytes = 250;

void emit(YAML::Emitter& out, const YAML::Node& node) {
  if (node.IsMap()) {
    out << YAML::BeginMap;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar() || entry.first.Scalar().size() > kMaxImplicitKeyBytes) {
        out << YAML::LongKey;
      }
      out << YAML::Key;
      emit(out, entry.first);
      out << YAML::Value;
      emit(out, entry.second);
    }
    out << YAML::EndMap;
  } else if (node.IsSequence()) {
    out << YAML::BeginSeq;
    for (const auto& item : node) emit(out, item);
    out << YAML::EndSeq;
  } else {
    out << node;
  }
}

}  // namespace

StatusOr<std::string> mergeCloudConfigs(const std::vector<CloudConfigLayer>& layers) {
  YAML::Node merged(YAML::NodeType::Map);
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& layer = layers[i];
    if (auto checked = api::checkYamlStream(layer.text, layer.source); !checked.isOk()) {
      return error(Code::kInvalidArgument, "CloudConfigInvalid",
                   layer.source + " is not YAML (" + checked.message() + ")");
    }
    YAML::Node doc;
    try {
      doc = YAML::Load(layer.text);
    } catch (const YAML::Exception& e) {
      return error(Code::kInvalidArgument, "CloudConfigInvalid",
                   layer.source + " is not YAML: " + e.what());
    }
    if (!doc.IsDefined() || doc.IsNull()) continue;  // an empty layer adds nothing
    if (!doc.IsMap()) {
      return error(
          Code::kInvalidArgument, "CloudConfigInvalid",
          layer.source + " must be a YAML map at the top level, not " + std::string(typeName(doc)));
    }
    try {
      if (auto conflict = mergeMap(merged, doc, "")) {
        return error(Code::kInvalidArgument, "CloudConfigConflict",
                     layer.source + ": key '" + conflict->path + "' is " + conflict->layer_type +
                         " here but " + conflict->base_type +
                         " in an earlier cloudConfigs layer; layers can only merge maps with "
                         "maps and lists with lists");
      }
    } catch (const YAML::Exception& e) {
      return error(Code::kInvalidArgument, "CloudConfigInvalid",
                   layer.source + " cannot be merged: " + e.what());
    }
  }
  YAML::Emitter out;
  emit(out, merged);
  if (!out.good()) {
    return error(Code::kInternal, "CloudConfigInvalid",
                 std::string("the merged cloud-config cannot be written: ") + out.GetLastError());
  }
  std::string text = "#cloud-config\n" + std::string(out.c_str()) + "\n";
  // What kairos reads must be YAML: anything the emitter writes that its parser would refuse is
  // an error here, naming the cause, not a build that fails later without one.
  try {
    (void)YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return error(Code::kInvalidArgument, "CloudConfigInvalid",
                 std::string("the merged cloud-config does not read back as YAML: ") + e.what());
  }
  return text;
}

}  // namespace banlieue::roles::images
