// The finalizer a Provider keeps on each VMImage it imports (docs/adr/0037-image-deletion.md):
// its provider removes it once the image's copies are gone from its backend; the operator
// removes it when the Provider itself is deleted, so no VMImage waits on a workload that is
// gone.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <string>

namespace banlieue::roles {

// "images.banlieue.io/<namespace>.<name>", the name part hashed down to the 63 characters a
// qualified name allows.
std::string imageFinalizer(const std::string& provider_namespace, const std::string& provider_name);

// Removes that finalizer from every VMImage carrying it; the count released, or the first error.
StatusOr<int> releaseImageFinalizers(kube::KubeClient& client,
                                     const std::string& provider_namespace,
                                     const std::string& provider_name);

}  // namespace banlieue::roles
