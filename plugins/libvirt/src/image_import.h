// import_image: verifies the artifact's checksum (fail closed), creates the volume in the pool
// the request's target names (one of the importTargets introspection publishes: the Provider's
// declared pools, docs/adr/0053), or without a target in every declared pool, and streams the
// bytes into it with libvirt's stream API. The work runs on a thread the instance owns; calls
// start it and then poll it by operation token, reporting progress, so no call blocks past its
// deadline however large the image.
#pragma once

#include "plugins/libvirt/src/connection.h"

#include <banlieue/sdk/background_operations.h>
#include <banlieue/sdk/provider.h>

#include <memory>
#include <string>
#include <vector>

namespace banlieue::libvirt {

// Distinct pool targets of the Provider's storage classes (spec.capabilities.storageClasses[]
// .target.pool), in declaration order.
std::vector<std::string> declaredPools(const rapidjson::Value* provider);

class ImageImporter {
 public:
  ImageImporter(Connection& connection, std::string provider_class, std::vector<std::string> pools);
  ~ImageImporter();
  ImageImporter(const ImageImporter&) = delete;
  ImageImporter& operator=(const ImageImporter&) = delete;

  sdk::Status importImage(const sdk::Call& call, const sdk::ImportImageRequest& request,
                          sdk::Reply& reply);

  // delete_image (ABI 1.1): removes every volume an import of this VMImage made in the
  // request's target pool, or without a target in every declared pool ("<image>-<12
  // hex>.<format>": the current build's and older builds'), once nothing uses it; synchronous,
  // so OK or an error, never IN_PROGRESS. A target the Provider no longer declares is OK with a
  // Warning event (PoolNotDeclared) and nothing removed.
  sdk::Status deleteImage(const sdk::Call& call, const sdk::DeleteImageRequest& request);

  // Cancels running uploads (their partial volumes are deleted) and joins their threads.
  void shutdown();

 private:
  struct Job;
  sdk::Status report(const sdk::Call& call, const std::string& token, Job& job, sdk::Reply& reply);
  bool declaresPool(const std::string& pool) const;
  std::string declaredPoolList() const;  // "a, b", or "none"

  Connection& connection_;
  std::string provider_class_;
  std::vector<std::string> pools_;
  sdk::BackgroundOperations<Job> jobs_;
};

}  // namespace banlieue::libvirt
