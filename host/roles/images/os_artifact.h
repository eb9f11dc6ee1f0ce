// What banlieue asks kairos-operator to build for a VMImage, and how the build's progress reads
// back as VMImage.status.buildArtifact (docs/adr/0013). Pure functions over typed objects.
//
// The OSArtifact is build.kairos.io/v1alpha2 (kairos-operator's api/v1alpha2 types: spec.image
// .ref for a pre-built Kairos OCI image, spec.artifacts {arch, iso, cloudImage,
// cloudConfigRef{name,key}}, status.phase Pending|Building|Exporting|Ready|Error and
// status.message). kairos-operator writes the artifacts to PVC <osartifact>-artifacts and
// treats spec as immutable, so a changed build is a new OSArtifact, not an update.
#pragma once

#include "host/api/vm_class.h"
#include "host/common/status_or.h"

#include <rapidjson/fwd.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace banlieue::roles::images {

inline constexpr const char* kOsArtifactApiVersion = "build.kairos.io/v1alpha2";
inline constexpr const char* kImageBuilderManager = "banlieue.io/imagebuilder";
inline constexpr const char* kVMImageAnnotation = "banlieue.io/vmimage";
inline constexpr const char* kBuildSpecHashAnnotation = "banlieue.io/build-spec-hash";
inline constexpr const char* kMergedCloudConfigKey = "cloud-config.yaml";
// Volume names on the OSArtifact (spec.volumes), none of them one kairos reserves.
inline constexpr const char* kOverlaySourceVolume = "iso-overlay-source";
inline constexpr const char* kOverlayVolume = "iso-overlay";
inline constexpr const char* kTrustedBootKeysVolume = "trusted-boot-keys";
inline constexpr const char* kDefaultOverlayCopyImage = "busybox:1.36";

// The build a VMImage asks for: its first Url source with importFrom.
struct BuildPlan {
  std::string provider_class;
  std::string import_from;  // the Kairos OCI image
  std::string kind;         // cloudImage | iso
  std::string arch;
  std::string source_checksum;  // the source's own pin, if any
  bool merge_cloud_config = false;
  // spec.isoOverlay: the Secret's declared files (key -> path relative to the ISO root; every
  // key when empty), copied into a writable volume the build lays onto the ISO.
  std::string overlay_secret;
  std::vector<std::pair<std::string, std::string>> overlay_files;
  // spec.trustedBoot: the Secret holding the six signing keys; the build is a UKI ISO.
  std::string trusted_boot_secret;
  // Secret name -> the keys that Secret must hold before the build is asked for (names only:
  // the imagebuilder never reads a value of these Secrets).
  std::map<std::string, std::vector<std::string>> secret_keys_needed;
};

// The six files auroraboot's UKI build signs with, generated out of band (auroraboot genkey).
inline const std::vector<std::string>& trustedBootKeyNames() {
  static const std::vector<std::string> names = {"PK.auth", "KEK.auth", "db.auth",
                                                 "db.key",  "db.pem",   "tpm2-pcr-private.pem"};
  return names;
}

// The keys of `wanted` the Secret `secret` lacks (its data and stringData key names are all that
// is looked at).
std::vector<std::string> missingSecretKeys(const rapidjson::Value& secret,
                                           const std::vector<std::string>& wanted);

// nullopt-like: an image without a Url source needs no build (reason NoUrlSource). A Url
// source without importFrom is an error (reason ImportFromMissing); so are an overlay on a
// cloud-image build or with a path leaving the ISO (IsoOverlayInvalid) and an overlay together
// with trusted boot (TrustedBootWithIsoOverlay).
StatusOr<BuildPlan> planBuild(const api::VMImage& image);

std::string osArtifactName(const std::string& image_name);     // <image>-build
std::string mergedSecretName(const std::string& image_name);   // <image>-cloud-config-merged
std::string artifactsPvcName(const std::string& os_artifact);  // <osartifact>-artifacts
std::string artifactFileName(const std::string& os_artifact, const std::string& kind);

// The OSArtifact to apply, owned by the VMImage (uid), carrying the hash of its spec in an
// annotation so a changed build is detected without comparing kairos-defaulted fields.
// `overlay_copy_image` runs the importer that copies an isoOverlay's files out of their Secret
// mount (any image with a POSIX `cp`).
std::string osArtifactManifest(const api::VMImage& image, const BuildPlan& plan,
                               const std::string& build_namespace,
                               const std::string& overlay_copy_image = kDefaultOverlayCopyImage);
// The hash osArtifactManifest puts in kBuildSpecHashAnnotation.
std::string buildSpecHash(const api::VMImage& image, const BuildPlan& plan);

// The merged cloud-config Secret (data base64-encoded), owned by the VMImage.
std::string mergedSecretManifest(const api::VMImage& image, const std::string& build_namespace,
                                 const std::string& merged_yaml);

// kairos phase -> banlieue phase and reason: Pending -> Pending/Pending, Building and
// Exporting -> Building/Building, Ready -> Ready/Reconciled, Error -> Failed/BuildFailed.
// Unknown or missing phases read as Pending.
api::BuildArtifact buildArtifactFrom(const rapidjson::Value& os_artifact, const BuildPlan& plan);

// The status apply body: {apiVersion, kind, metadata{name}, status{buildArtifact}} and
// nothing else, so perProvider rows and conditions (other managers) are untouched.
std::string buildArtifactApply(const std::string& image_name, const api::BuildArtifact& artifact);

bool sameBuildArtifact(const api::BuildArtifact& a, const api::BuildArtifact& b);

}  // namespace banlieue::roles::images
