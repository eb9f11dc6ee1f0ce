#include "host/roles/provider/user_data_resolution.h"

#include "host/api/capi_contract.h"
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

StatusOr<std::optional<UserData>> resolveUserData(kube::KubeClient& client,
                                                  const rapidjson::Value& object) {
  const std::string name = annotation(object, api::kUserDataSecretAnnotation);
  if (name.empty()) return std::optional<UserData>();
  const std::string ns = json::stringOr(&object, "metadata.namespace");
  const std::string where = "userData Secret " + ns + "/" + name;
  const std::string key = annotation(object, api::kUserDataKeyAnnotation);
  const bool bootstrap = key == api::kBootstrapDataKey;
  if (!key.empty() && !bootstrap) {
    return error(Code::kFailedPrecondition, "UserDataNotFound",
                 "annotation " + std::string(api::kUserDataKeyAnnotation) + " names key '" + key +
                     "'; only '" + api::kBootstrapDataKey +
                     "' (a Cluster API bootstrap Secret) may be named");
  }
  auto secret = client.get(kube::resources::kSecret, ns, name);
  if (!secret.ok()) {
    if (kube::isNotFound(secret.status())) {
      return error(Code::kNotFound, "UserDataNotFound", where + " not found");
    }
    return secret.status();
  }
  if (bootstrap) {
    const std::string cluster = runtime::label(object, api::kClusterNameLabel);
    if (json::stringOr(&*secret, "type") != api::kBootstrapSecretType || cluster.empty() ||
        runtime::label(*secret, api::kClusterNameLabel) != cluster) {
      return error(Code::kFailedPrecondition, "UserDataNotFound",
                   where + " is not this machine's bootstrap data (type " +
                       api::kBootstrapSecretType + ", label " + api::kClusterNameLabel + "=" +
                       cluster + ")");
    }
  } else {
    const std::string owner = controllerUid(object);
    if (json::stringOr(&*secret, "type") != api::kRenderedUserDataType || owner.empty() ||
        controllerUid(*secret) != owner) {
      return error(Code::kFailedPrecondition, "UserDataNotFound",
                   where + " is not this object's rendered userData (type " +
                       api::kRenderedUserDataType + ", owned by the same VirtualMachine)");
    }
  }
  if (json::stringOr(&*secret, "metadata.resourceVersion") !=
      annotation(object, api::kUserDataRevisionAnnotation)) {
    return error(Code::kUnavailable, "UserDataStale",
                 where + " changed since this object was written; waiting for the controller");
  }
  const std::string data_key = bootstrap ? api::kBootstrapDataKey : api::kRenderedUserDataKey;
  auto stored = json::string(&*secret, "data." + data_key);
  auto text = stored ? common::decodeBase64(*stored) : std::nullopt;
  if (!text) {
    return error(Code::kFailedPrecondition, "UserDataNotFound",
                 where + " has no base64 data." + data_key);
  }
  UserData out{.text = std::move(*text), .format = {}};
  if (bootstrap) {
    auto format = json::string(&*secret, std::string("data.") + api::kBootstrapFormatKey);
    auto decoded = format ? common::decodeBase64(*format) : std::nullopt;
    out.format = decoded ? *decoded : std::string("cloud-config");
  }
  return std::optional<UserData>(std::move(out));
}

void injectUserData(rapidjson::Value& object, const UserData& data,
                    rapidjson::Document::AllocatorType& a) {
  auto spec = object.FindMember("spec");
  if (spec == object.MemberEnd() || !spec->value.IsObject()) {
    object.RemoveMember("spec");
    object.AddMember("spec", rapidjson::Value(rapidjson::kObjectType), a);
    spec = object.FindMember("spec");
  }
  spec->value.RemoveMember("userData");
  spec->value.AddMember("userData", json::stringValue(data.text, a), a);
  spec->value.RemoveMember("userDataFormat");
  if (!data.format.empty() && data.format != "cloud-config") {
    spec->value.AddMember("userDataFormat", json::stringValue(data.format, a), a);
  }
}

}  // namespace banlieue::roles::provider
