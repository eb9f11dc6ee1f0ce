#include "host/roles/common/image_finalizer.h"

#include "host/common/fnv_hash.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <fmt/format.h>

namespace banlieue::roles {

namespace {
const kube::ResourceType kVMImages{"banlieue.io", "v1alpha1", "vmimages", false};
}  // namespace

std::string imageFinalizer(const std::string& provider_namespace,
                           const std::string& provider_name) {
  std::string name = provider_namespace + "." + provider_name;
  if (name.size() > 63) {
    name = fmt::format("{}-{:016x}", name.substr(0, 46),
                       common::fnv1a64(provider_namespace + "/" + provider_name));
  }
  return "images.banlieue.io/" + name;
}

StatusOr<int> releaseImageFinalizers(kube::KubeClient& client,
                                     const std::string& provider_namespace,
                                     const std::string& provider_name) {
  const std::string finalizer = imageFinalizer(provider_namespace, provider_name);
  auto images = client.list(kVMImages, "", {});
  if (!images.ok()) return images.status();
  int released = 0;
  const auto* items = sdk::json::find(&*images, "items");
  if (items == nullptr || !items->IsArray()) return released;
  for (const auto& image : items->GetArray()) {
    if (!runtime::hasFinalizer(image, finalizer)) continue;
    if (auto s = runtime::removeFinalizer(client, kVMImages, image, finalizer); !s.isOk()) return s;
    ++released;
  }
  return released;
}

}  // namespace banlieue::roles
