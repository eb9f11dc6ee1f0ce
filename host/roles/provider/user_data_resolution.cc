#include "host/roles/provider/user_data_resolution.h"

#include "host/api/user_data_contract.h"
#include "host/common/base64.h"
#include "host/kube/api_error.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using runtime::annotation;

std::string controllerUid(const rapidjson::Value& object) {
  const auto* owner = runtime::controllerReference(object);
  return owner == nullptr ? std::string() : json::stringOr(owner, "uid");
}

}  // namespace

StatusOr<std::optional<std::string>> resolveUserData(kube::KubeClient& client,
                                                     const rapidjson::Value& object) {
  const std::string name = annotation(object, api::kUserDataSecretAnnotation);
  if (name.empty()) return std::optional<std::string>();
  const std::string ns = json::stringOr(&object, "metadata.namespace");
  const std::string where = "userData Secret " + ns + "/" + name;
  auto secret = client.get(kube::resources::kSecret, ns, name);
  if (!secret.ok()) {
    if (kube::isNotFound(secret.status())) {
      return error(Code::kNotFound, "UserDataNotFound", where + " not found");
    }
    return secret.status();
  }
  const std::string owner = controllerUid(object);
  if (json::stringOr(&*secret, "type") != api::kRenderedUserDataType || owner.empty() ||
      controllerUid(*secret) != owner) {
    return error(Code::kFailedPrecondition, "UserDataNotFound",
                 where + " is not this object's rendered userData (type " +
                     api::kRenderedUserDataType + ", owned by the same VirtualMachine)");
  }
  if (json::stringOr(&*secret, "metadata.resourceVersion") !=
      annotation(object, api::kUserDataRevisionAnnotation)) {
    return error(Code::kUnavailable, "UserDataStale",
                 where + " changed since this object was written; waiting for the controller");
  }
  auto stored = json::string(&*secret, std::string("data.") + api::kRenderedUserDataKey);
  auto text = stored ? common::decodeBase64(*stored) : std::nullopt;
  if (!text) {
    return error(Code::kFailedPrecondition, "UserDataNotFound",
                 where + " has no base64 data." + api::kRenderedUserDataKey);
  }
  return std::optional<std::string>(std::move(*text));
}

void injectUserData(rapidjson::Value& object, const std::string& text,
                    rapidjson::Document::AllocatorType& a) {
  auto spec = object.FindMember("spec");
  if (spec == object.MemberEnd() || !spec->value.IsObject()) {
    object.RemoveMember("spec");
    object.AddMember("spec", rapidjson::Value(rapidjson::kObjectType), a);
    spec = object.FindMember("spec");
  }
  spec->value.RemoveMember("userData");
  spec->value.AddMember("userData", json::stringValue(text, a), a);
}

}  // namespace banlieue::roles::provider
