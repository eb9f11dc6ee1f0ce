#include "host/roles/devnode/pod_volumes.h"

#include "host/common/base64.h"
#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>
#include <fmt/format.h>

#include <fstream>
#include <system_error>

namespace banlieue::roles::devnode {
namespace {

namespace json = sdk::json;
namespace fs = std::filesystem;

Status writeFile(const fs::path& path, const std::string& content, int mode) {
  // A key path may contain directories (items[].path: "a/b"); it may never climb out.
  if (path.lexically_normal().string().find("..") != std::string::npos) {
    return error(Code::kInvalidArgument, "InvalidVolumePath", "path " + path.string());
  }
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    return error(Code::kInternal, "VolumeWriteFailed", "cannot write " + path.string());
  }
  fs::permissions(path, static_cast<fs::perms>(mode), ec);
  return Status::ok();
}

int modeOf(const rapidjson::Value* source, const rapidjson::Value* item, int fallback = 0644) {
  if (auto m = json::integer(item, "mode")) return static_cast<int>(*m);
  if (auto m = json::integer(source, "defaultMode")) return static_cast<int>(*m);
  return fallback;
}

// Key -> content of a Secret (decoded) or ConfigMap (data and binaryData).
StatusOr<std::map<std::string, std::string>> readKeys(kube::KubeClient& client,
                                                      const std::string& ns, bool secret,
                                                      const std::string& name, bool optional,
                                                      bool& absent) {
  absent = false;
  auto object =
      client.get(secret ? kube::resources::kSecret : kube::resources::kConfigMap, ns, name);
  if (!object.ok()) {
    if (kube::isNotFound(object.status())) {
      absent = true;
      if (optional) return std::map<std::string, std::string>{};
      return error(Code::kNotFound, "CreateContainerConfigError",
                   std::string(secret ? "secret" : "configmap") + " \"" + name + "\" not found");
    }
    return object.status();
  }
  std::map<std::string, std::string> keys;
  auto take = [&](const char* field, bool base64) {
    if (const auto* data = json::find(&*object, field); data && data->IsObject()) {
      for (const auto& m : data->GetObject()) {
        std::string_view v(m.value.GetString(), m.value.GetStringLength());
        keys[m.name.GetString()] = base64 ? common::decodeBase64(v).value_or("") : std::string(v);
      }
    }
  };
  take("data", secret);
  if (!secret) take("binaryData", true);
  return keys;
}

// Writes a Secret or ConfigMap source (whole, or its items) under `dir`.
Status writeKeySource(kube::KubeClient& client, const std::string& ns, const rapidjson::Value& src,
                      bool secret, const fs::path& dir) {
  std::string name = json::stringOr(&src, secret ? "secretName" : "name");
  if (name.empty()) name = json::stringOr(&src, "name");
  bool optional = json::boolean(&src, "optional");
  bool absent = false;
  auto keys = readKeys(client, ns, secret, name, optional, absent);
  if (!keys.ok()) return keys.status();
  const auto* items = json::find(&src, "items");
  if (items != nullptr && items->IsArray() && items->Size() > 0) {
    for (const auto& item : items->GetArray()) {
      std::string key = json::stringOr(&item, "key");
      auto it = keys->find(key);
      if (it == keys->end()) {
        if (optional) continue;
        return error(Code::kNotFound, "CreateContainerConfigError",
                     fmt::format("key \"{}\" not found in {} {}", key,
                                 secret ? "secret" : "configmap", name));
      }
      auto s = writeFile(dir / json::stringOr(&item, "path", key), it->second, modeOf(&src, &item));
      if (!s.isOk()) return s;
    }
    return Status::ok();
  }
  for (const auto& [key, content] : *keys) {
    auto s = writeFile(dir / key, content, modeOf(&src, nullptr));
    if (!s.isOk()) return s;
  }
  return Status::ok();
}

Status writeDownwardApi(const rapidjson::Value& pod, const rapidjson::Value& src,
                        const fs::path& dir) {
  const auto* items = json::find(&src, "items");
  if (items == nullptr || !items->IsArray()) return Status::ok();
  for (const auto& item : items->GetArray()) {
    std::string field = json::stringOr(&item, "fieldRef.fieldPath");
    if (field.empty()) {
      return error(Code::kUnimplemented, "UnsupportedVolume",
                   "downwardAPI item " + json::stringOr(&item, "path") +
                       ": only fieldRef is supported by the node agent");
    }
    auto value = podFieldValue(pod, field);
    if (!value.ok()) return value.status();
    auto s = writeFile(dir / json::stringOr(&item, "path"), *value, modeOf(&src, &item));
    if (!s.isOk()) return s;
  }
  return Status::ok();
}

Status writeServiceAccountToken(kube::KubeClient& client, const rapidjson::Value& pod,
                                const rapidjson::Value& src, const fs::path& dir) {
  std::string ns = json::stringOr(&pod, "metadata.namespace");
  std::string sa = json::stringOr(&pod, "spec.serviceAccountName", "default");
  rapidjson::Document request(rapidjson::kObjectType);
  auto& a = request.GetAllocator();
  request.AddMember("apiVersion", "authentication.k8s.io/v1", a);
  request.AddMember("kind", "TokenRequest", a);
  rapidjson::Value spec(rapidjson::kObjectType);
  rapidjson::Value audiences(rapidjson::kArrayType);
  if (auto aud = json::stringOr(&src, "audience"); !aud.empty()) {
    audiences.PushBack(json::stringValue(aud, a), a);
  }
  spec.AddMember("audiences", audiences, a);
  spec.AddMember("expirationSeconds", json::integer(&src, "expirationSeconds").value_or(3607), a);
  rapidjson::Value bound(rapidjson::kObjectType);
  bound.AddMember("apiVersion", "v1", a);
  bound.AddMember("kind", "Pod", a);
  bound.AddMember("name", json::stringValue(json::stringOr(&pod, "metadata.name"), a), a);
  bound.AddMember("uid", json::stringValue(json::stringOr(&pod, "metadata.uid"), a), a);
  spec.AddMember("boundObjectRef", bound, a);
  request.AddMember("spec", spec, a);
  // POST .../serviceaccounts/<sa>/token: the subresource addressed as a collection.
  kube::ResourceType token_type{"", "v1", "serviceaccounts/" + sa + "/token", true};
  auto response = client.create(token_type, ns, json::serialize(request));
  if (!response.ok()) {
    return error(
        response.status().code(), "CreateContainerConfigError",
        "token request for service account " + ns + "/" + sa + ": " + response.status().message());
  }
  return writeFile(dir / json::stringOr(&src, "path", "token"),
                   json::stringOr(&*response, "status.token"), 0600);
}

}  // namespace

StatusOr<std::string> podFieldValue(const rapidjson::Value& pod, const std::string& field_path) {
  auto indexed = [&](const char* prefix) -> std::optional<std::string> {
    std::string p = std::string(prefix) + "['";
    if (field_path.rfind(p, 0) != 0 || field_path.size() < p.size() + 2) return std::nullopt;
    std::string key = field_path.substr(p.size(), field_path.size() - p.size() - 2);
    const auto* map = json::find(&pod, prefix);
    return map != nullptr ? json::stringOr(json::member(map, key), "") : std::string();
  };
  if (auto v = indexed("metadata.labels")) return *v;
  if (auto v = indexed("metadata.annotations")) return *v;
  if (field_path == "status.podIP" || field_path == "status.hostIP")
    return std::string("127.0.0.1");
  if (field_path == "spec.serviceAccountName") {
    return json::stringOr(&pod, field_path, "default");
  }
  if (field_path == "metadata.name" || field_path == "metadata.namespace" ||
      field_path == "metadata.uid" || field_path == "spec.nodeName") {
    return json::stringOr(&pod, field_path);
  }
  return error(Code::kUnimplemented, "UnsupportedFieldRef",
               "fieldRef " + field_path + " is not supported by the node agent");
}

StatusOr<VolumePaths> materializeVolumes(kube::KubeClient& client, const rapidjson::Value& pod,
                                         const fs::path& pod_dir) {
  VolumePaths paths;
  std::string ns = json::stringOr(&pod, "metadata.namespace");
  const auto* volumes = json::find(&pod, "spec.volumes");
  if (volumes == nullptr || !volumes->IsArray()) return paths;
  for (const auto& volume : volumes->GetArray()) {
    std::string name = json::stringOr(&volume, "name");
    fs::path dir = pod_dir / "volumes" / name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      return error(Code::kInternal, "VolumeWriteFailed",
                   "cannot create " + dir.string() + ": " + ec.message());
    }
    Status s = Status::ok();
    if (const auto* src = json::member(&volume, "secret")) {
      s = writeKeySource(client, ns, *src, true, dir);
    } else if (const auto* src = json::member(&volume, "configMap")) {
      s = writeKeySource(client, ns, *src, false, dir);
    } else if (const auto* src = json::member(&volume, "downwardAPI")) {
      s = writeDownwardApi(pod, *src, dir);
    } else if (const auto* src = json::member(&volume, "projected")) {
      const auto* sources = json::find(src, "sources");
      if (sources != nullptr && sources->IsArray()) {
        for (const auto& part : sources->GetArray()) {
          if (!s.isOk()) break;
          if (const auto* p = json::member(&part, "secret")) {
            s = writeKeySource(client, ns, *p, true, dir);
          } else if (const auto* p = json::member(&part, "configMap")) {
            s = writeKeySource(client, ns, *p, false, dir);
          } else if (const auto* p = json::member(&part, "downwardAPI")) {
            s = writeDownwardApi(pod, *p, dir);
          } else if (const auto* p = json::member(&part, "serviceAccountToken")) {
            s = writeServiceAccountToken(client, pod, *p, dir);
          }
        }
      }
    } else if (json::member(&volume, "emptyDir") != nullptr) {
      // the directory itself
    } else if (const auto* src = json::member(&volume, "hostPath")) {
      fs::path host = json::stringOr(src, "path");
      std::string type = json::stringOr(src, "type");
      if (type == "DirectoryOrCreate") fs::create_directories(host, ec);
      if (!fs::exists(host)) {
        s = error(Code::kNotFound, "CreateContainerConfigError",
                  "hostPath " + host.string() + " does not exist on the node");
      } else {
        dir = host;
      }
    } else {
      s = error(Code::kUnimplemented, "UnsupportedVolume",
                "volume " + name +
                    ": the node agent supports secret, configMap, projected, downwardAPI, "
                    "emptyDir and hostPath volumes");
    }
    if (!s.isOk()) return s;
    paths[name] = dir;
  }
  return paths;
}

}  // namespace banlieue::roles::devnode
