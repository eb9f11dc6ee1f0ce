// import_image: a cloud image artifact becomes a template VM on one node (the failure domain).
// The artifact is checked against every digest it must match (fail closed) before anything is
// written, copied over SFTP into an "import" storage of the node, turned into a VM whose disk
// is `import-from` that file on the Provider's storage, converted to a template, and the
// staging file removed. The template's name carries the image name and digest, so a repeated
// import (a lost token, a restart) finds it instead of importing twice. The work runs on a
// thread the importer owns; calls start it and then poll it by operation token.
#pragma once

#include "plugins/proxmox/src/node_files.h"
#include "plugins/proxmox/src/pve_client.h"

#include <banlieue/sdk/background_operations.h>
#include <banlieue/sdk/provider.h>

#include <memory>
#include <string>
#include <vector>

namespace banlieue::proxmox {

class ImageImporter {
 public:
  // `storages`: the Provider's storage class targets in declaration order; the first one the
  // node has with content "images" receives the template's disk.
  ImageImporter(const PveClient& client, const NodeFiles& files, std::string provider_class,
                std::vector<std::string> storages);
  ~ImageImporter();
  ImageImporter(const ImageImporter&) = delete;
  ImageImporter& operator=(const ImageImporter&) = delete;

  sdk::Status importImage(const sdk::Call& call, const sdk::ImportImageRequest& request,
                          sdk::Reply& reply);
  // delete_image (ABI 1.1, ADR 0037): destroys, one task at a time (polled by its UPID), every
  // template on the node named as this image's imports name them (this build's and older
  // ones'); OK once none is left.
  sdk::Status deleteImage(const sdk::Call& call, const sdk::DeleteImageRequest& request,
                          sdk::Reply& reply);
  // Stops running imports (each cleans up what it wrote) and joins their threads.
  void shutdown();

 private:
  struct Job;
  sdk::Status report(const std::string& token, const std::shared_ptr<Job>& job,
                     const sdk::Call& call, sdk::Reply& reply);
  void run(Job& job);

  const PveClient& client_;
  const NodeFiles& files_;
  std::string provider_class_;
  std::vector<std::string> storages_;
  sdk::BackgroundOperations<Job> jobs_;
};

// The template's name for an image and the sha256 of its artifact.
std::string templateName(const std::string& image, const std::string& sha256);

}  // namespace banlieue::proxmox
