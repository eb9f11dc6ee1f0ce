// Turns one container of a pod into a LaunchSpec the node agent can start: the banlieue binary
// for images of banlieue's own repository (anything else is refused with a reason), the
// container's env resolved as a kubelet resolves it ($(VAR) references, fieldRef, Secret and
// ConfigMap keys, envFrom), service discovery variables for the API server, and bind mounts
// of the materialised volumes.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"
#include "host/roles/devnode/container_process.h"
#include "host/roles/devnode/pod_volumes.h"

#include <rapidjson/document.h>

#include <filesystem>
#include <string>

namespace banlieue::roles::devnode {

struct NodeContext {
  std::string image_repository;           // e.g. localhost/banlieue
  std::filesystem::path banlieue_binary;  // what the image's banlieue command runs
  std::string api_host, api_port;         // KUBERNETES_SERVICE_HOST / _PORT
};

// "localhost/banlieue:1.2" -> "localhost/banlieue" (tag or digest removed).
std::string imageRepository(const std::string& image);

// Expands $(NAME) from `vars`; $$ escapes; unknown references stay as written (kubelet rule).
std::string expandReferences(const std::string& text,
                             const std::vector<std::pair<std::string, std::string>>& vars);

StatusOr<LaunchSpec> buildLaunchSpec(kube::KubeClient& client, const NodeContext& node,
                                     const rapidjson::Value& pod, const rapidjson::Value& container,
                                     const VolumePaths& volumes,
                                     const std::filesystem::path& log_file);

}  // namespace banlieue::roles::devnode
