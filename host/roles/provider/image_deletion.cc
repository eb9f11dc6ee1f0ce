#include "host/roles/provider/image_deletion.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

// A zone whose copy is gone or kept on purpose: never asked about again.
bool zoneDone(const std::string& reason) {
  return reason == "Deleted" || reason == "Retained";
}

// While a task runs or the backend says the image is in use, how often to look again.
constexpr std::chrono::seconds kInUseRetry{30};
constexpr std::chrono::seconds kTaskPoll{5};

}  // namespace

bool retainOnDelete(const rapidjson::Value& image) {
  return json::boolean(&image, "spec.template.retainOnDelete", false);
}

std::string sourceKindFor(const rapidjson::Value& image, const std::string& class_name) {
  const auto* sources = json::find(&image, "spec.sources");
  if (sources == nullptr || !sources->IsArray()) return {};
  for (const auto& s : sources->GetArray()) {
    if (json::stringOr(&s, "providerClass") == class_name) return json::stringOr(&s, "kind");
  }
  return {};
}

std::vector<ZoneToDelete> zonesToDelete(const rapidjson::Value* row) {
  std::vector<ZoneToDelete> out;
  const auto* zones = row != nullptr ? json::find(row, "zones") : nullptr;
  if (zones == nullptr || !zones->IsArray()) return out;
  for (const auto& z : zones->GetArray()) {
    if (zoneDone(json::stringOr(&z, "reason"))) continue;
    out.push_back({json::stringOr(&z, "name"), json::stringOr(&z, "resolvedRef"),
                   json::stringOr(&z, "operationToken"), json::stringOr(&z, "failureDomain"),
                   json::stringOr(&z, "target")});
  }
  return out;
}

std::string deleteImageRequest(const rapidjson::Value& image, const ZoneToDelete& zone) {
  rapidjson::Document request(rapidjson::kObjectType);
  auto& a = request.GetAllocator();
  request.AddMember("image", rapidjson::Value(image, a), a);
  // A per-target row names its failure domain; an older row is named after it.
  request.AddMember(
      "failureDomain",
      json::stringValue(zone.failure_domain.empty() ? zone.name : zone.failure_domain, a), a);
  if (!zone.target.empty()) request.AddMember("target", json::stringValue(zone.target, a), a);
  if (!zone.resolved_ref.empty()) {
    request.AddMember("resolvedRef", json::stringValue(zone.resolved_ref, a), a);
  }
  if (!zone.token.empty()) {
    rapidjson::Value operation(rapidjson::kObjectType);
    operation.AddMember("token", json::stringValue(zone.token, a), a);
    request.AddMember("operation", operation, a);
  }
  return json::serialize(request);
}

ZoneDeletion zoneDeletion(const plugin::CallResult& result) {
  ZoneDeletion out;
  const auto& o = result.outcome;
  auto hinted = [&](std::chrono::milliseconds fallback) {
    return o.requeue_after_ms >= 0 ? std::chrono::milliseconds(o.requeue_after_ms) : fallback;
  };
  if (o.code == BANLIEUE_OK) {
    out.done = true;
    out.reason = "Deleted";
    out.message = "removed from the backend";
    return out;
  }
  if (o.code == BANLIEUE_IN_PROGRESS) {
    rapidjson::Document body;
    body.Parse(o.body.c_str());
    out.token = body.HasParseError() ? std::string() : json::stringOr(&body, "operation.token");
    out.reason = "Deleting";
    out.message = o.message.empty() ? "the backend is removing the image" : o.message;
    out.retry_after = hinted(kTaskPoll);
    return out;
  }
  if (o.code == BANLIEUE_UNIMPLEMENTED) {
    // A plugin without delete_image (an ABI 1.0 plugin, or a backend that cannot): the copy
    // stays, and the VMImage is not held back for ever by what nobody can do.
    out.done = true;
    out.reason = "Retained";
    out.message = "the plugin cannot delete images (" +
                  (o.reason.empty() ? std::string("NotSupportedByBackend") : o.reason) +
                  "): the copy stays on the backend";
    out.warning = true;
    return out;
  }
  out.reason = o.reason.empty() ? "DeleteFailed" : o.reason;
  out.message = o.message;
  out.warning = out.reason != "ImageInUse";
  out.retry_after = out.reason == "ImageInUse" ? hinted(kInUseRetry) : hinted(kTaskPoll);
  return out;
}

rapidjson::Document deletionRow(
    const rapidjson::Value* current, const std::string& provider_namespace,
    const std::string& provider_name,
    const std::vector<std::pair<ZoneToDelete, ZoneDeletion>>& outcomes) {
  rapidjson::Document row(rapidjson::kObjectType);
  auto& a = row.GetAllocator();
  row.AddMember("providerName", json::stringValue(provider_name, a), a);
  row.AddMember("providerNamespace", json::stringValue(provider_namespace, a), a);
  row.AddMember("ready", false, a);
  rapidjson::Value zones(rapidjson::kArrayType);
  size_t done = 0, total = 0;
  std::string first_open;
  auto add = [&](const rapidjson::Value& current_zone, const std::string& resolved_ref,
                 const std::string& reason, const std::string& message, const std::string& token) {
    std::string name = json::stringOr(&current_zone, "name");
    rapidjson::Value zone(rapidjson::kObjectType);
    zone.AddMember("name", json::stringValue(name, a), a);
    // Which failure domain and target the row is about stays as long as the row.
    for (const char* key : {"failureDomain", "target"}) {
      if (std::string value = json::stringOr(&current_zone, key); !value.empty()) {
        zone.AddMember(rapidjson::StringRef(key), json::stringValue(value, a), a);
      }
    }
    zone.AddMember("ready", false, a);
    if (!resolved_ref.empty()) zone.AddMember("resolvedRef", json::stringValue(resolved_ref, a), a);
    if (!reason.empty()) zone.AddMember("reason", json::stringValue(reason, a), a);
    if (!message.empty()) zone.AddMember("message", json::stringValue(message, a), a);
    if (!token.empty()) zone.AddMember("operationToken", json::stringValue(token, a), a);
    zones.PushBack(zone, a);
    ++total;
    if (zoneDone(reason)) {
      ++done;
    } else if (first_open.empty()) {
      first_open = name + ": " + reason + (message.empty() ? "" : " (" + message + ")");
    }
  };
  const auto* current_zones = current != nullptr ? json::find(current, "zones") : nullptr;
  if (current_zones != nullptr && current_zones->IsArray()) {
    for (const auto& z : current_zones->GetArray()) {
      std::string name = json::stringOr(&z, "name");
      const ZoneDeletion* outcome = nullptr;
      for (const auto& [zone, deletion] : outcomes) {
        if (zone.name == name) outcome = &deletion;
      }
      std::string resolved_ref = json::stringOr(&z, "resolvedRef");
      if (outcome == nullptr) {
        add(z, resolved_ref, json::stringOr(&z, "reason"), json::stringOr(&z, "message"),
            json::stringOr(&z, "operationToken"));
      } else {
        add(z, outcome->done ? std::string() : resolved_ref, outcome->reason, outcome->message,
            outcome->token);
      }
    }
  }
  row.AddMember("reason", rapidjson::StringRef(done == total ? "Deleted" : "Deleting"), a);
  std::string message = done == total
                            ? "removed from " + std::to_string(total) + " failure domain(s)"
                            : std::to_string(done) + " of " + std::to_string(total) +
                                  " failure domain(s) done; " + first_open;
  row.AddMember("message", json::stringValue(message, a), a);
  row.AddMember("zones", zones, a);
  return row;
}

}  // namespace banlieue::roles::provider
