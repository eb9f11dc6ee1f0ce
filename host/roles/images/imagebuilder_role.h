// `banlieue imagebuilder`: for each VMImage with a Url source, the merged cloud-config Secret
// and a kairos-operator OSArtifact in the build namespace, and the build's progress mirrored
// into VMImage.status.buildArtifact with field manager banlieue.io/imagebuilder (never
// perProvider, never conditions). One active replica (Lease banlieue-imagebuilder).
#pragma once

#include "host/api/vm_class.h"
#include "host/app/command.h"
#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace banlieue::roles::images {

inline const kube::ResourceType kVMImageType{"banlieue.io", "v1alpha1", "vmimages", false};
inline const kube::ResourceType kOsArtifactType{"build.kairos.io", "v1alpha2", "osartifacts", true};

struct ImageBuilderOptions {
  std::string build_namespace = "banlieue-imagebuild";
  // Where the artifacts PVCs are visible to this process, one directory per PVC name; when
  // set, a Ready artifact's sha256 is taken from its "<file>.sha256" sidecar or computed. Without
  // it the source's own checksum pin is the only one recorded.
  std::filesystem::path artifacts_root;
  // False while the cluster does not serve the OSArtifact API (kairos-operator not installed):
  // Url VMImages then say so (buildArtifact reason BuildUnavailable) and nothing is built.
  bool build_api_served = true;
  // banlieue's own image, for the Jobs the imagebuilder runs in the build namespace: the
  // checksum Job (checksum_job.h), which mounts a build's artifacts PVC read-only and reports
  // the digest recorded in buildArtifact.checksum, and the importer copying isoOverlay files.
  // Empty (and no artifacts_root): the source's checksum pin is the only one recorded.
  std::string job_image;
};

// The message a Url VMImage carries while the OSArtifact API is not served.
inline constexpr const char* kBuildUnavailableMessage =
    "the OSArtifact API (build.kairos.io/v1alpha2 osartifacts, installed with kairos-operator) "
    "is not served by this cluster: the image is built once it is";

// The reconciler, separate from the process wiring so tests can drive it with their own
// informers.
class ImageBuilderReconciler final : public runtime::Reconciler {
 public:
  // `jobs`: the build namespace's checksum Jobs; null when no job_image is set.
  ImageBuilderReconciler(kube::KubeClient& client, runtime::Informer& images,
                         runtime::Informer& artifacts, runtime::Informer* jobs,
                         ImageBuilderOptions options);
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  runtime::Informer& images_;
  runtime::Informer& artifacts_;
  runtime::Informer* jobs_;
  ImageBuilderOptions options_;

  // What the build's checksum Job says: done with a checksum, still running, or failed.
  struct Learned {
    bool done = false;
    std::string checksum;
    Status failure = Status::ok();
    std::string progress;  // while running: what is happening, for the image's message
  };
  Learned checksumFromJob(const api::VMImage& image, const api::BuildArtifact& built,
                          const std::string& algorithm);
  // The Secrets a build names (isoOverlay, trustedBoot) hold the keys it needs; only the key
  // names are looked at.
  Status secretsHoldTheirKeys(const std::map<std::string, std::vector<std::string>>& needed,
                              const std::string& overlay_secret);
};

// Watches VMImages, the build namespace's OSArtifacts and checksum Jobs (mapped back through
// the banlieue.io/vmimage annotation).
void wireImageBuilder(runtime::Controller& controller, runtime::Informer& images,
                      runtime::Informer& artifacts, runtime::Informer* jobs = nullptr);

// The label selector of the imagebuilder's checksum Jobs.
std::string checksumJobSelector();

void registerImageBuilderCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::images
