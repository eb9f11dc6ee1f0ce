// Materialises a pod's volumes as directories on the node, as a kubelet would before starting
// containers: Secrets, ConfigMaps, projected sources (including service-account tokens through
// the TokenRequest API), downward API files, emptyDir and hostPath. A missing Secret or
// ConfigMap that is not optional is an error naming it (CreateContainerConfigError).
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace banlieue::roles::devnode {

// Volume name -> directory (or file, for hostPath files) on the node.
using VolumePaths = std::map<std::string, std::filesystem::path>;

StatusOr<VolumePaths> materializeVolumes(kube::KubeClient& client, const rapidjson::Value& pod,
                                         const std::filesystem::path& pod_dir);

// Reads metadata.name, metadata.namespace, metadata.uid, metadata.labels['k'],
// metadata.annotations['k'], spec.nodeName, spec.serviceAccountName, status.hostIP and
// status.podIP (the node agent's pods share the node's loopback address).
StatusOr<std::string> podFieldValue(const rapidjson::Value& pod, const std::string& field_path);

}  // namespace banlieue::roles::devnode
