#include "host/roles/devnode/pod_launch.h"

#include "host/common/base64.h"
#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::devnode {
namespace {

namespace json = sdk::json;
using Vars = std::vector<std::pair<std::string, std::string>>;

void setVar(Vars& vars, const std::string& name, const std::string& value) {
  for (auto& [n, v] : vars) {
    if (n == name) {
      v = value;
      return;
    }
  }
  vars.emplace_back(name, value);
}

// One key of a Secret or ConfigMap; nullopt (and OK) when optional and absent.
StatusOr<std::optional<std::string>> keyValue(kube::KubeClient& client, const std::string& ns,
                                              const rapidjson::Value& ref, bool secret) {
  std::string name = json::stringOr(&ref, "name");
  std::string key = json::stringOr(&ref, "key");
  bool optional = json::boolean(&ref, "optional");
  auto object =
      client.get(secret ? kube::resources::kSecret : kube::resources::kConfigMap, ns, name);
  const char* what = secret ? "secret" : "configmap";
  if (!object.ok()) {
    if (kube::isNotFound(object.status())) {
      if (optional) return std::optional<std::string>{};
      return error(Code::kNotFound, "CreateContainerConfigError",
                   std::string(what) + " \"" + name + "\" not found");
    }
    return object.status();
  }
  const auto* data = json::find(&*object, "data");
  const auto* value = json::member(data, key);
  if (value == nullptr || !value->IsString()) {
    if (optional) return std::optional<std::string>{};
    return error(Code::kNotFound, "CreateContainerConfigError",
                 "couldn't find key " + key + " in " + what + " " + ns + "/" + name);
  }
  std::string_view v(value->GetString(), value->GetStringLength());
  return std::optional<std::string>(secret ? common::decodeBase64(v).value_or("") : std::string(v));
}

Status addEnvFrom(kube::KubeClient& client, const std::string& ns, const rapidjson::Value& source,
                  Vars& vars) {
  std::string prefix = json::stringOr(&source, "prefix");
  for (bool secret : {false, true}) {
    const auto* ref = json::member(&source, secret ? "secretRef" : "configMapRef");
    if (ref == nullptr) continue;
    std::string name = json::stringOr(ref, "name");
    auto object =
        client.get(secret ? kube::resources::kSecret : kube::resources::kConfigMap, ns, name);
    if (!object.ok()) {
      if (kube::isNotFound(object.status()) && json::boolean(ref, "optional")) continue;
      return error(
          object.status().code(), "CreateContainerConfigError",
          std::string(secret ? "secret " : "configmap ") + name + ": " + object.status().message());
    }
    if (const auto* data = json::find(&*object, "data"); data && data->IsObject()) {
      for (const auto& m : data->GetObject()) {
        std::string_view v(m.value.GetString(), m.value.GetStringLength());
        setVar(vars, prefix + m.name.GetString(),
               secret ? common::decodeBase64(v).value_or("") : std::string(v));
      }
    }
  }
  return Status::ok();
}

}  // namespace

std::string imageRepository(const std::string& image) {
  std::string repo = image.substr(0, image.find('@'));
  auto slash = repo.rfind('/');
  auto colon = repo.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repo = repo.substr(0, colon);
  }
  return repo;
}

std::string expandReferences(const std::string& text, const Vars& vars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '(') {
      auto close = text.find(')', i + 2);
      if (close != std::string::npos) {
        std::string name = text.substr(i + 2, close - i - 2);
        auto it = std::find_if(vars.begin(), vars.end(),
                               [&](const auto& var) { return var.first == name; });
        if (it != vars.end()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

StatusOr<LaunchSpec> buildLaunchSpec(kube::KubeClient& client, const NodeContext& node,
                                     const rapidjson::Value& pod, const rapidjson::Value& container,
                                     const VolumePaths& volumes,
                                     const std::filesystem::path& log_file) {
  std::string ns = json::stringOr(&pod, "metadata.namespace");
  std::string container_name = json::stringOr(&container, "name");
  std::string image = json::stringOr(&container, "image");
  if (imageRepository(image) != node.image_repository) {
    return error(
        Code::kFailedPrecondition, "ImageNotRunnable",
        "the banlieue node agent runs only images of " + node.image_repository + ", not " + image);
  }

  // Environment: service discovery first, then envFrom, then env (later entries win).
  Vars vars;
  setVar(vars, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  setVar(vars, "HOSTNAME", json::stringOr(&pod, "metadata.name"));
  setVar(vars, "KUBERNETES_SERVICE_HOST", node.api_host);
  setVar(vars, "KUBERNETES_SERVICE_PORT", node.api_port);
  setVar(vars, "KUBERNETES_SERVICE_PORT_HTTPS", node.api_port);
  if (const auto* env_from = json::member(&container, "envFrom"); env_from && env_from->IsArray()) {
    for (const auto& source : env_from->GetArray()) {
      auto s = addEnvFrom(client, ns, source, vars);
      if (!s.isOk()) return s;
    }
  }
  if (const auto* env = json::member(&container, "env"); env && env->IsArray()) {
    for (const auto& entry : env->GetArray()) {
      std::string name = json::stringOr(&entry, "name");
      const auto* from = json::member(&entry, "valueFrom");
      if (from == nullptr) {
        setVar(vars, name, expandReferences(json::stringOr(&entry, "value"), vars));
        continue;
      }
      if (const auto* field = json::member(from, "fieldRef")) {
        auto value = podFieldValue(pod, json::stringOr(field, "fieldPath"));
        if (!value.ok()) return value.status();
        setVar(vars, name, *value);
      } else if (const auto* ref = json::member(from, "secretKeyRef")) {
        auto value = keyValue(client, ns, *ref, true);
        if (!value.ok()) return value.status();
        if (*value) setVar(vars, name, **value);
      } else if (const auto* ref = json::member(from, "configMapKeyRef")) {
        auto value = keyValue(client, ns, *ref, false);
        if (!value.ok()) return value.status();
        if (*value) setVar(vars, name, **value);
      } else {
        return error(Code::kUnimplemented, "CreateContainerConfigError",
                     "env " + name +
                         ": only fieldRef, secretKeyRef and configMapKeyRef are "
                         "supported by the node agent");
      }
    }
  }

  LaunchSpec spec;
  spec.executable = node.banlieue_binary.string();
  spec.argv.push_back("banlieue");
  const auto* command = json::member(&container, "command");
  if (command != nullptr && command->IsArray() && command->Size() > 0) {
    std::string program = json::stringOr(&(*command)[0], "");
    if (std::filesystem::path(program).filename() != "banlieue") {
      return error(Code::kFailedPrecondition, "CreateContainerError",
                   "container " + container_name + ": command " + program +
                       " is not in the image; the node agent runs the banlieue binary");
    }
    for (rapidjson::SizeType i = 1; i < command->Size(); ++i) {
      spec.argv.push_back(expandReferences(json::stringOr(&(*command)[i], ""), vars));
    }
  }
  if (const auto* args = json::member(&container, "args"); args && args->IsArray()) {
    for (const auto& arg : args->GetArray()) {
      spec.argv.push_back(expandReferences(arg.IsString() ? arg.GetString() : "", vars));
    }
  }
  for (const auto& [name, value] : vars) {
    std::string entry = name;
    entry += '=';
    entry += value;
    spec.env.push_back(std::move(entry));
  }

  if (const auto* mounts = json::member(&container, "volumeMounts"); mounts && mounts->IsArray()) {
    for (const auto& m : mounts->GetArray()) {
      std::string volume = json::stringOr(&m, "name");
      auto it = volumes.find(volume);
      if (it == volumes.end()) {
        return error(Code::kInvalidArgument, "CreateContainerConfigError",
                     "volumeMount " + volume + " names no volume of the pod");
      }
      std::filesystem::path source = it->second;
      if (auto sub = json::stringOr(&m, "subPath"); !sub.empty()) {
        if (sub.find("..") != std::string::npos || sub.front() == '/') {
          return error(Code::kInvalidArgument, "CreateContainerConfigError",
                       "subPath " + sub + " must be relative and stay inside the volume");
        }
        source /= sub;
      }
      spec.mounts.push_back(
          {source.string(), json::stringOr(&m, "mountPath"), json::boolean(&m, "readOnly")});
    }
  }
  spec.working_dir = json::stringOr(&container, "workingDir", "/");
  spec.log_file = log_file;
  return spec;
}

}  // namespace banlieue::roles::devnode
