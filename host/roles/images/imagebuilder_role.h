// `banlieue imagebuilder`: for each VMImage with a Url source, the merged cloud-config Secret
// and a kairos-operator OSArtifact in the build namespace, and the build's progress mirrored
// into VMImage.status.buildArtifact with field manager banlieue.io/imagebuilder (never
// perProvider, never conditions). One active replica (Lease banlieue-imagebuilder).
#pragma once

#include "host/app/command.h"
#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <filesystem>
#include <string>

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
};

// The message a Url VMImage carries while the OSArtifact API is not served.
inline constexpr const char* kBuildUnavailableMessage =
    "the OSArtifact API (build.kairos.io/v1alpha2 osartifacts, installed with kairos-operator) "
    "is not served by this cluster: the image is built once it is";

// The reconciler, separate from the process wiring so tests can drive it with their own
// informers.
class ImageBuilderReconciler final : public runtime::Reconciler {
 public:
  ImageBuilderReconciler(kube::KubeClient& client, runtime::Informer& images,
                         runtime::Informer& artifacts, ImageBuilderOptions options);
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  runtime::Informer& images_;
  runtime::Informer& artifacts_;
  ImageBuilderOptions options_;
};

// Watches VMImages and the build namespace's OSArtifacts (mapped back through the
// banlieue.io/vmimage annotation).
void wireImageBuilder(runtime::Controller& controller, runtime::Informer& images,
                      runtime::Informer& artifacts);

void registerImageBuilderCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::images
