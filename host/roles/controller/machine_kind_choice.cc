#include "host/roles/controller/machine_kind_choice.h"

#include <banlieue/sdk/json.h>

namespace banlieue::controller {
namespace json = sdk::json;
namespace {

std::optional<MachineKind> kindAt(const rapidjson::Value* value) {
  if (value == nullptr || !value->IsObject()) return std::nullopt;
  std::string api_version = json::stringOr(value, "apiVersion");
  std::string kind = json::stringOr(value, "kind");
  if (api_version.empty() || kind.empty()) return std::nullopt;
  return MachineKind{std::move(api_version), std::move(kind)};
}

}  // namespace

std::vector<MachineKind> publishedMachineKinds(const rapidjson::Value& provider_class) {
  std::vector<MachineKind> out;
  auto add = [&out](std::optional<MachineKind> kind) {
    if (!kind) return;
    for (const auto& k : out) {
      if (k.api_version == kind->api_version && k.kind == kind->kind) return;
    }
    out.push_back(std::move(*kind));
  };
  add(kindAt(json::find(&provider_class, "status.machineKind")));
  if (const auto* kinds = json::find(&provider_class, "status.machineKinds");
      kinds != nullptr && kinds->IsArray()) {
    for (const auto& k : kinds->GetArray()) add(kindAt(&k));
  }
  return out;
}

StatusOr<MachineKind> chooseMachineKind(const rapidjson::Value* provider_class,
                                        const rapidjson::Value* provider,
                                        const std::string& class_name) {
  if (provider_class == nullptr) {
    return error(Code::kFailedPrecondition, "MachineKindNotPublished",
                 "ProviderClass " + class_name + " does not exist");
  }
  auto kinds = publishedMachineKinds(*provider_class);
  if (kinds.empty()) {
    return error(Code::kFailedPrecondition, "MachineKindNotPublished",
                 "ProviderClass " + class_name +
                     " has not published status.machineKind (is the operator running, and has "
                     "a provider pod of the class loaded its plugin?)");
  }
  const std::string wanted =
      provider == nullptr ? std::string() : json::stringOr(provider, "spec.machineKind");
  if (wanted.empty()) return kinds.front();
  std::string served;
  for (const auto& k : kinds) {
    if (k.kind == wanted) return k;
    served += (served.empty() ? "" : ", ") + k.kind;
  }
  return error(Code::kFailedPrecondition, "MachineKindNotServed",
               "Provider " + json::stringOr(provider, "metadata.namespace") + "/" +
                   json::stringOr(provider, "metadata.name") + " asks for spec.machineKind " +
                   wanted + ", which ProviderClass " + class_name + " does not serve (it serves " +
                   served + ")");
}

}  // namespace banlieue::controller
