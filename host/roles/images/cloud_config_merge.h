// The ordered deep merge of a VMImage's spec.cloudConfigs[] into the one cloud-config that
// kairos bakes into the built artifact (ADR 0013). Later sources win for scalars; maps merge
// key by key; lists concatenate (earlier entries first), so a later layer can add users,
// stages or files without restating the earlier ones. A key that is a map in one layer and a
// list or scalar in another is an error naming the key path and both layers, never a silent
// overwrite. A null value (an empty `key:`) holds no opinion: it neither replaces nor clashes.
#pragma once

#include "host/common/status_or.h"

#include <string>
#include <vector>

namespace banlieue::roles::images {

struct CloudConfigLayer {
  std::string source;  // for error messages, e.g. "cloudConfigs[1] (Secret base, key user.yaml)"
  std::string text;    // YAML, usually starting with "#cloud-config"
};

// The merged document, starting with "#cloud-config", which a YAML reader takes back (a key
// too long to be written implicitly is written explicitly). Errors carry reason
// CloudConfigInvalid (a layer that is not YAML or whose top level is not a map, or a merge that
// would not read back) or CloudConfigConflict (type mismatch), with the source and the key path
// in the message.
StatusOr<std::string> mergeCloudConfigs(const std::vector<CloudConfigLayer>& layers);

}  // namespace banlieue::roles::images
