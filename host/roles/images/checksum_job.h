// The Job that learns what a build produced (docs/adr/0052): once kairos-operator says an
// OSArtifact is Ready, the imagebuilder runs `banlieue image-checksum` in the build namespace
// with the artifacts PVC mounted read-only and records the digest it reports as
// VMImage.status.buildArtifact.checksum, which every import Job then verifies before writing to
// a backend. The imagebuilder itself mounts nothing: kairos makes one PVC per build.
//
// Pure functions: the manifest, its name, and what a finished Job's pod says.
#pragma once

#include "host/common/status_or.h"

#include <rapidjson/fwd.h>

#include <string>

namespace banlieue::roles::images {

inline constexpr const char* kChecksumComponent = "artifact-checksum";
inline constexpr const char* kChecksumContainerName = "checksum";

struct ChecksumJobParams {
  std::string image_name;  // VMImage (cluster-scoped); owner
  std::string image_uid;
  std::string os_artifact_name;  // owner: a rebuild collects the old Job
  std::string os_artifact_uid;
  std::string pvc_name;       // the artifacts PVC, mounted read-only
  std::string artifact_file;  // a plain file name on that volume
  std::string algorithm = "sha256";
  std::string job_namespace;
  std::string container_image;  // banlieue's own image
  std::string log_level = "info";
  int backoff_limit = 2;
  int active_deadline_seconds = 3600;
};

// checksum-<image prefix>-<hash of the OSArtifact uid, file and algorithm>: one per build.
std::string checksumJobName(const ChecksumJobParams& params);

// The batch/v1 Job (JSON): non-root, read-only root filesystem, no capabilities, no API token,
// the PVC read-only. Reason ChecksumJobInvalid names a missing or unsafe parameter.
StatusOr<std::string> checksumJob(const ChecksumJobParams& params);

struct ChecksumOutcome {
  enum class State { kRunning, kSucceeded, kFailed };
  State state = State::kRunning;
  std::string checksum;  // "<alg>:<hex>" on success
  std::string reason;    // on failure: ArtifactMissing, ArtifactUnreadable, ChecksumJobFailed
  std::string message;
};

// `pod` is the Job's newest pod (nullptr when none is known). The digest and any failure
// reason come from the container's termination message ({"checksum"} or {"reason","message"}).
ChecksumOutcome checksumOutcome(const rapidjson::Value& job, const rapidjson::Value* pod);

}  // namespace banlieue::roles::images
