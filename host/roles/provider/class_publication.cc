#include "host/roles/provider/class_publication.h"

#include "host/api/codec.h"
#include "host/common/logging.h"
#include "host/plugin/sha256.h"
#include "host/roles/provider/plugin_resolution.h"
#include "host/roles/provider/status_writer.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace json = sdk::json;
namespace {

// status.plugin as the codec writes it, so it compares equal to what the apiserver returns.
rapidjson::Document encodePublished(const api::PublishedPlugin& published) {
  api::ProviderClass holder;
  holder.status.plugin = published;
  rapidjson::Document doc;
  (void)api::parseJson(api::toJson(holder), doc);
  rapidjson::Document out;
  if (const auto* plugin = json::find(&doc, "status.plugin"); plugin != nullptr) {
    out.CopyFrom(*plugin, out.GetAllocator());
  } else {
    out.SetObject();
  }
  return out;
}

}  // namespace

api::PublishedPlugin describePublished(const plugin::Plugin& plugin, int64_t class_generation) {
  const auto& manifest = plugin.manifest();
  const auto& header = plugin.client().table().header;
  api::PublishedPlugin out;
  out.name = manifest.name;
  out.version = manifest.provider_version;
  out.abi = std::to_string(header.abi_major) + "." + std::to_string(header.abi_minor);
  if (auto digest = plugin::sha256File(manifest.libraryPath()); digest.ok()) out.sha256 = *digest;
  for (const auto& gvk : manifest.infrastructure) {
    out.infrastructure_kinds.push_back(
        {gvk.group.empty() ? gvk.version : gvk.group + "/" + gvk.version, gvk.kind});
  }
  auto described = plugin.describe();
  rapidjson::Document caps;
  if (described.ok() && !caps.Parse(described.outcome.body.c_str()).HasParseError() &&
      caps.IsObject()) {
    if (const auto* operations = json::find(&caps, "operations");
        operations != nullptr && operations->IsObject()) {
      for (const auto& m : operations->GetObject()) {
        if (m.value.IsBool() && m.value.GetBool()) out.operations.emplace_back(m.name.GetString());
      }
    }
    if (const auto* features = json::find(&caps, "features");
        features != nullptr && features->IsArray()) {
      for (const auto& f : features->GetArray()) {
        if (f.IsString()) out.features.emplace_back(f.GetString());
      }
    }
  }
  out.observed_generation = class_generation;
  return out;
}

bool shouldPublish(const rapidjson::Value* current, const api::PublishedPlugin& desired,
                   bool already_written) {
  if (current == nullptr || !current->IsObject()) return true;
  auto encoded = encodePublished(desired);
  if (*current == encoded) return false;
  const int64_t theirs = json::integer(current, "observedGeneration").value_or(0);
  if (theirs > desired.observed_generation) return false;
  if (theirs == desired.observed_generation) return !already_written;
  return true;
}

ClassPublisher::ClassPublisher(kube::KubeClient& client, runtime::Informer& classes,
                               api::PublishedPlugin published, std::string field_manager)
    : client_(client),
      classes_(classes),
      published_(std::move(published)),
      field_manager_(std::move(field_manager)) {}

runtime::Result ClassPublisher::reconcile(const runtime::Request& request) {
  auto object = classes_.get(request.key());
  if (!object) return runtime::Result::done();
  const auto* current = json::find(object.get(), "status.plugin");
  if (!shouldPublish(current, published_, written_)) return runtime::Result::done();
  rapidjson::Document status(rapidjson::kObjectType);
  auto& a = status.GetAllocator();
  status.AddMember("plugin", rapidjson::Value(encodePublished(published_), a), a);
  auto applied = applyStatusIfChanged(client_, kProviderClassType, *object, status, field_manager_);
  if (!applied.ok()) return runtime::Result::retry(applied.status());
  written_ = true;
  common::logger("provider")
      ->info("providerclass {}: published plugin {} {} (ABI {}, {} kinds)", request.name,
             published_.name, published_.version, published_.abi,
             published_.infrastructure_kinds.size());
  return runtime::Result::done();
}

}  // namespace banlieue::roles::provider
