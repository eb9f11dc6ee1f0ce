// apiextensions.k8s.io/v1 CustomResourceDefinitions built from the kinds' declarations.
// Structural schemas only (no CEL), so they install on Kubernetes 1.20 and current releases.
#pragma once

#include "host/api/kinds.h"

#include <rapidjson/document.h>

namespace banlieue::api {

inline constexpr const char* kCategory = "banlieue";

rapidjson::Document buildCrd(const KindInfo& kind);

// The CRD file name crdgen writes for a kind: <group>_<plural>.yaml (the kubebuilder layout).
std::string crdFileName(const std::string& group, const std::string& plural);

}  // namespace banlieue::api
