#include "host/roles/provider/image_row.h"

#include "host/plugin/sha256.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

void addString(rapidjson::Value& object, const char* name, const std::string& value,
               rapidjson::Document::AllocatorType& a) {
  if (!value.empty()) object.AddMember(rapidjson::StringRef(name), json::stringValue(value, a), a);
}

}  // namespace

std::optional<rapidjson::Document> buildImageRow(const rapidjson::Value& image,
                                                 const ImageRowContext& context) {
  const rapidjson::Value* source = nullptr;
  if (const auto* sources = json::find(&image, "spec.sources");
      sources != nullptr && sources->IsArray()) {
    for (const auto& s : sources->GetArray()) {
      if (json::stringOr(&s, "providerClass") == context.class_name) {
        source = &s;
        break;
      }
    }
  }
  if (source == nullptr) return std::nullopt;

  rapidjson::Document row(rapidjson::kObjectType);
  auto& a = row.GetAllocator();
  row.AddMember("providerName", json::stringValue(context.provider_name, a), a);
  row.AddMember("providerNamespace", json::stringValue(context.provider_namespace, a), a);
  std::string kind = json::stringOr(source, "kind");
  std::string ref = json::stringOr(source, "ref");
  bool ready = false;
  std::string reason, message;
  rapidjson::Value zones(rapidjson::kArrayType);
  size_t domains = context.failure_domains != nullptr && context.failure_domains->IsArray()
                       ? context.failure_domains->GetArray().Size()
                       : 0;

  if (kind == "Template" || kind == "BackingFile") {
    if (ref.empty()) {
      reason = "InvalidSource";
      message = "source for class " + context.class_name + " has kind " + kind + " but no ref";
    } else if (domains == 0) {
      reason = "NoFailureDomains";
      message = "the Provider has reported no failure domains yet";
    } else {
      ready = true;
      reason = "Referenced";
      message = kind + " " + ref + " is used as is in every failure domain";
      for (const auto& fd : context.failure_domains->GetArray()) {
        rapidjson::Value zone(rapidjson::kObjectType);
        zone.AddMember("name", json::stringValue(json::stringOr(&fd, "name"), a), a);
        zone.AddMember("ready", true, a);
        zone.AddMember("resolvedRef", json::stringValue(ref, a), a);
        zones.PushBack(zone, a);
      }
      row.AddMember("resolvedRef", json::stringValue(ref, a), a);
    }
  } else if (kind == "Url") {
    std::string phase = json::stringOr(&image, "status.buildArtifact.phase");
    if (phase == "Failed") {
      reason = "BuildFailed";
      message = json::stringOr(&image, "status.buildArtifact.message", "the image build failed");
    } else if (json::stringOr(&image, "status.buildArtifact.reason") == "BuildUnavailable") {
      // Nothing builds until the platform team installs the build API: said as it is.
      reason = "BuildUnavailable";
      message = json::stringOr(&image, "status.buildArtifact.message");
    } else if (phase != "Ready") {
      reason = "BuildPending";
      message = phase.empty() ? "waiting for banlieue imagebuilder (status.buildArtifact not set)"
                              : "waiting for the image build (phase " + phase + ")";
    } else if (domains == 0) {
      reason = "NoFailureDomains";
      message = "the Provider has reported no failure domains yet";
    } else {
      reason = "ImportPending";
      message = "the built artifact is waiting to be imported into " + std::to_string(domains) +
                " failure domain(s)";
    }
  } else {
    reason = "UnsupportedSourceKind";
    message = "source kind '" + kind + "' is not Template, BackingFile or Url";
  }
  row.AddMember("ready", ready, a);
  addString(row, "reason", reason, a);
  addString(row, "message", message, a);
  row.AddMember("zones", zones, a);
  return row;
}

std::string imageRowFieldManager(const std::string& class_name,
                                 const std::string& provider_namespace,
                                 const std::string& provider_name) {
  std::string manager =
      "banlieue.io/provider-" + class_name + "/" + provider_namespace + "/" + provider_name;
  if (manager.size() <= 128) return manager;
  return manager.substr(0, 119) + "-" + plugin::sha256Hex(manager).substr(0, 8);
}

}  // namespace banlieue::roles::provider
