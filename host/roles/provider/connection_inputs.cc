#include "host/roles/provider/connection_inputs.h"

#include "host/common/base64.h"
#include "host/plugin/sha256.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

const char* const kDefaultCaKey = "ca.crt";

// Key/value data of a Secret (base64) or ConfigMap (plain), or an error naming the object.
StatusOr<std::map<std::string, std::string>> readData(
    kube::KubeClient& client, const kube::ResourceType& type, const std::string& ns,
    const std::string& name, const std::string& not_found_reason, const std::string& what) {
  auto object = client.get(type, ns, name);
  if (!object.ok()) {
    const auto& s = object.status();
    if (s.code() == Code::kNotFound) {
      return error(Code::kFailedPrecondition, not_found_reason,
                   what + " " + ns + "/" + name + " does not exist");
    }
    if (s.code() == Code::kPermissionDenied) {
      return error(
          Code::kPermissionDenied, "CredentialsForbidden",
          "this provider may not read " + what + " " + ns + "/" + name + ": " + s.message());
    }
    return s;
  }
  std::map<std::string, std::string> out;
  bool secret = type.plural == "secrets";
  if (const auto* data = json::member(&*object, "data"); data != nullptr && data->IsObject()) {
    for (const auto& m : data->GetObject()) {
      if (!m.value.IsString()) continue;
      std::string_view value(m.value.GetString(), m.value.GetStringLength());
      if (secret) {
        auto decoded = common::decodeBase64(value);
        if (!decoded) {
          std::string message = what;
          message.append(" ").append(ns).append("/").append(name).append(" key ");
          message.append(m.name.GetString()).append(" is not base64");
          return error(Code::kInvalidArgument, "CredentialsInvalid", message);
        }
        out[m.name.GetString()] = std::move(*decoded);
      } else {
        out[m.name.GetString()] = std::string(value);
      }
    }
  }
  return out;
}

StatusOr<std::string> readCaBundle(kube::KubeClient& client, const std::string& ns,
                                   const rapidjson::Value& source) {
  const auto* inline_pem = json::member(&source, "inline");
  const auto* config_map = json::member(&source, "configMapRef");
  const auto* secret = json::member(&source, "secretRef");
  int set = (inline_pem != nullptr) + (config_map != nullptr) + (secret != nullptr);
  if (set != 1) {
    return error(Code::kInvalidArgument, "CABundleInvalid",
                 "spec.connection.caBundle must set exactly one of inline, configMapRef, "
                 "secretRef (" +
                     std::to_string(set) + " set)");
  }
  if (inline_pem != nullptr) return json::stringOr(inline_pem, "");
  const auto* ref = config_map != nullptr ? config_map : secret;
  std::string name = json::stringOr(ref, "name");
  std::string key = json::stringOr(ref, "key", kDefaultCaKey);
  if (key.empty()) key = kDefaultCaKey;
  auto data = readData(
      client, config_map != nullptr ? kube::resources::kConfigMap : kube::resources::kSecret, ns,
      name, "CABundleNotFound", config_map != nullptr ? "CA bundle ConfigMap" : "CA bundle Secret");
  if (!data.ok()) return data.status();
  auto it = data->find(key);
  if (it == data->end()) {
    return error(Code::kFailedPrecondition, "CABundleKeyMissing",
                 "CA bundle " + ns + "/" + name + " has no key " + key);
  }
  return it->second;
}

}  // namespace

ConnectionInputs buildConnectionInputs(const rapidjson::Value& provider,
                                       const std::map<std::string, std::string>& credentials,
                                       const std::string& ca_pem) {
  rapidjson::Document config(rapidjson::kObjectType);
  auto& a = config.GetAllocator();
  rapidjson::Value copy(provider, a);
  // Only what a plugin needs: the status and managed fields are noise, and dropping them
  // keeps the fingerprint stable across status writes.
  copy.RemoveMember("status");
  if (auto* meta = copy.FindMember("metadata") != copy.MemberEnd() ? &copy["metadata"] : nullptr;
      meta != nullptr && meta->IsObject()) {
    meta->RemoveMember("managedFields");
    meta->RemoveMember("resourceVersion");
    meta->RemoveMember("generation");
  }
  if (copy.HasMember("spec") && copy["spec"].IsObject() && copy["spec"].HasMember("connection") &&
      copy["spec"]["connection"].IsObject()) {
    auto& connection = copy["spec"]["connection"];
    connection.RemoveMember("caBundle");
    if (!ca_pem.empty()) {
      rapidjson::Value bundle(rapidjson::kObjectType);
      bundle.AddMember("data", json::stringValue(ca_pem, a), a);
      connection.AddMember("caBundle", bundle, a);
    }
  }
  config.AddMember("provider", copy, a);
  rapidjson::Value creds(rapidjson::kObjectType);
  for (const auto& [key, value] : credentials) {
    creds.AddMember(json::stringValue(key, a), json::stringValue(value, a), a);
  }
  config.AddMember("credentials", creds, a);

  ConnectionInputs inputs;
  inputs.config_json = json::serialize(config);
  // The instance depends on the connection settings and secrets, not on labels, capabilities
  // or pause: those reach the plugin through introspect's request instead.
  std::string material = json::serialize(config["provider"]["spec"].HasMember("connection")
                                             ? config["provider"]["spec"]["connection"]
                                             : rapidjson::Value(rapidjson::kObjectType).Move());
  material += '\0';
  material += json::serialize(config["credentials"]);
  inputs.fingerprint = plugin::sha256Hex(material);
  return inputs;
}

StatusOr<ConnectionInputs> readConnectionInputs(kube::KubeClient& client,
                                                const rapidjson::Value& provider) {
  std::string ns = json::stringOr(&provider, "metadata.namespace");
  std::map<std::string, std::string> credentials;
  if (std::string secret = json::stringOr(&provider, "spec.connection.credentialsRef.name");
      !secret.empty()) {
    auto data = readData(client, kube::resources::kSecret, ns, secret, "CredentialsNotFound",
                         "credentials Secret");
    if (!data.ok()) return data.status();
    credentials = std::move(*data);
  }
  std::string ca_pem;
  if (const auto* source = json::find(&provider, "spec.connection.caBundle");
      source != nullptr && source->IsObject()) {
    auto pem = readCaBundle(client, ns, *source);
    if (!pem.ok()) return pem.status();
    ca_pem = std::move(*pem);
  }
  return buildConnectionInputs(provider, credentials, ca_pem);
}

bool inputsFailureIsAnAnswer(const Status& failure) {
  switch (failure.code()) {
    case Code::kUnavailable:
    case Code::kDeadlineExceeded:
    case Code::kInternal:
    case Code::kUnknown:
    case Code::kResourceExhausted:
    case Code::kAborted:
    case Code::kCancelled: return false;
    default: return true;
  }
}

}  // namespace banlieue::roles::provider
