#include "host/roles/controller/image_ready.h"

#include "host/api/codec.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/scheduler.h"
#include "host/roles/controller/vm_reconciler.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

namespace banlieue::controller {
namespace {
namespace json = sdk::json;
}  // namespace

api::Condition imageReadyCondition(
    const api::VMImage& image,
    const std::function<bool(const std::string&, const std::string&)>& provider_exists) {
  api::Condition ready{.type = "Ready", .observed_generation = image.metadata.generation};
  int rows = 0;
  std::vector<std::string> waiting;
  for (const auto& row : image.status.per_provider) {
    if (!provider_exists(row.provider_namespace, row.provider_name)) continue;
    ++rows;
    if (row.ready) continue;
    std::string entry = row.provider_namespace + "/" + row.provider_name;
    if (!row.reason.empty()) entry += " (" + row.reason + ")";
    waiting.push_back(entry);
  }
  if (rows == 0) {
    ready.status = "False";
    ready.reason = "NoProviderRows";
    ready.message = "no Provider has reported on this image yet";
  } else if (!waiting.empty()) {
    ready.status = "False";
    ready.reason = "ProvidersNotReady";
    ready.message = "not ready on " + joinCapped(waiting);
  } else {
    ready.status = "True";
    ready.reason = "ProvidersReady";
    ready.message = "ready on " + std::to_string(rows) + " provider(s)";
  }
  return ready;
}

runtime::Result ImageReconciler::reconcile(const runtime::Request& request) {
  auto object = images_.get(request.key());
  if (!object) return runtime::Result::done();
  auto image = api::fromJson<api::VMImage>(json::serialize(*object));
  if (!image.ok()) return runtime::Result::terminal(image.status());
  if (!ns_.empty()) {
    for (const auto& row : image->status.per_provider)
      if (row.provider_namespace != ns_) return runtime::Result::done();
  }
  auto wanted = imageReadyCondition(*image, [this](const std::string& ns, const std::string& name) {
    return providers_.get(ns + "/" + name) != nullptr;
  });
  std::string transition = runtime::rfc3339Now();
  for (const auto& existing : image->status.conditions) {
    if (existing.type != "Ready") continue;
    if (existing.status == wanted.status && existing.reason == wanted.reason &&
        existing.message == wanted.message &&
        existing.observed_generation == wanted.observed_generation)
      return runtime::Result::done();
    if (existing.status == wanted.status && !existing.last_transition_time.empty())
      transition = existing.last_transition_time;
  }
  wanted.last_transition_time = transition;
  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
  body.AddMember("kind", "VMImage", a);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", json::stringValue(image->metadata.name, a), a);
  body.AddMember("metadata", metadata, a);
  rapidjson::Value conditions(rapidjson::kArrayType);
  rapidjson::Value entry(rapidjson::kObjectType);
  entry.AddMember("type", "Ready", a);
  entry.AddMember("status", json::stringValue(wanted.status, a), a);
  entry.AddMember("observedGeneration", wanted.observed_generation, a);
  entry.AddMember("lastTransitionTime", json::stringValue(wanted.last_transition_time, a), a);
  entry.AddMember("reason", json::stringValue(wanted.reason, a), a);
  entry.AddMember("message", json::stringValue(wanted.message, a), a);
  conditions.PushBack(entry, a);
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("conditions", conditions, a);
  body.AddMember("status", status, a);
  auto applied =
      client_.apply(resources::kVMImage, "", image->metadata.name, json::serialize(body),
                    {.field_manager = kFieldManager, .force = true, .subresource = "status"});
  if (!applied.ok()) return runtime::Result::retry(applied.status());
  return runtime::Result::done();
}

}  // namespace banlieue::controller
