#include "host/roles/controller/rendered_user_data.h"

#include "host/common/base64.h"
#include "host/common/fnv_hash.h"
#include "host/roles/controller/infra_builder.h"

#include <banlieue/sdk/json.h>

#include <cstdio>
#include <string_view>

namespace banlieue::controller {

namespace json = sdk::json;

bool optedInAsUserData(const rapidjson::Value& secret) {
  const auto* labels = json::find(&secret, "metadata.labels");  // label keys contain dots
  if (labels == nullptr || !labels->IsObject()) return false;
  auto it = labels->FindMember(kUserDataOptInLabel);
  return it != labels->MemberEnd() && it->value.IsString() &&
         std::string_view(it->value.GetString(), it->value.GetStringLength()) == "true";
}

std::string renderedUserDataSecretName(const std::string& vm_name) {
  constexpr size_t kMaxName = 253;  // a Secret's name is a DNS subdomain
  const std::string suffix = "-rendered-userdata";
  if (vm_name.size() + suffix.size() <= kMaxName) return vm_name + suffix;
  char hash[18];
  std::snprintf(hash, sizeof(hash), "-%016llx",
                static_cast<unsigned long long>(common::fnv1a64(vm_name)));
  std::string head = vm_name.substr(0, kMaxName - suffix.size() - 17);
  while (!head.empty() && (head.back() == '-' || head.back() == '.')) head.pop_back();
  return head + hash + suffix;
}

rapidjson::Document renderedUserDataSecret(const api::VirtualMachine& vm, const std::string& text) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("apiVersion", "v1", a);
  doc.AddMember("kind", "Secret", a);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", json::stringValue(renderedUserDataSecretName(vm.metadata.name), a), a);
  metadata.AddMember("namespace", json::stringValue(vm.metadata.namespace_, a), a);
  rapidjson::Value labels(rapidjson::kObjectType);
  labels.AddMember(rapidjson::StringRef(kOwnedByLabel),
                   json::stringValue(ownedByLabelValue(vm.metadata.name), a), a);
  metadata.AddMember("labels", labels, a);
  rapidjson::Value owners(rapidjson::kArrayType);
  owners.PushBack(vmControllerReference(vm, a), a);
  metadata.AddMember("ownerReferences", owners, a);
  doc.AddMember("metadata", metadata, a);
  doc.AddMember("type", rapidjson::StringRef(kRenderedUserDataType), a);
  rapidjson::Value data(rapidjson::kObjectType);
  data.AddMember(rapidjson::StringRef(kRenderedUserDataKey),
                 json::stringValue(common::encodeBase64(text), a), a);
  doc.AddMember("data", data, a);
  return doc;
}

std::optional<std::string> renderedUserDataText(const rapidjson::Value& secret) {
  auto stored = json::string(&secret, std::string("data.") + kRenderedUserDataKey);
  if (!stored) return std::nullopt;
  return common::decodeBase64(*stored);
}

}  // namespace banlieue::controller
