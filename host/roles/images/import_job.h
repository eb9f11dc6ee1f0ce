// The per-zone import Job the provider runtime creates once VMImage.status.buildArtifact is
// Ready, and how a finished Job becomes a perProvider zone row (docs/adr/0013). Pure functions:
// no I/O, so the runtime decides when to create, adopt or replace a Job.
//
// The Job runs `banlieue image-import` for one (VMImage, Provider, failure domain), or for one
// import target of that failure domain when its backend publishes importTargets (libvirt: one
// Job per storage pool, docs/adr/0053), in the isolated build namespace under a dedicated
// ServiceAccount that may only read VMImages, the Provider and that Provider's credentials
// Secret (read through the API: no Secret copies, docs/adr/0015); the artifacts volume is
// mounted read-only; the root filesystem is read-only and privilege escalation is off. The one
// writable place is /tmp, a memory-backed emptyDir: what a plugin writes for the backend's client
// library (libvirt's client certificate and key for qemu+tls) stays in the pod's memory and goes
// with it. Its owners are the VMImage and the OSArtifact that built the artifact, so deleting the
// image collects its Jobs.
#pragma once

#include "host/api/vm_class.h"
#include "host/common/proxy_environment.h"
#include "host/common/status_or.h"

#include <rapidjson/fwd.h>

#include <string>

namespace banlieue::roles::images {

inline constexpr const char* kImageBuildNamespace = "banlieue-imagebuild";
inline constexpr const char* kImportServiceAccount = "banlieue-image-import";
inline constexpr const char* kArtifactsMountPath = "/artifacts";
inline constexpr const char* kScratchMountPath = "/tmp";
inline constexpr const char* kImportContainerName = "import";
// On every import Job: the name the Job would have without a force-reimport token (so Jobs of
// one artifact and zone are found whatever token made them) and the token itself.
inline constexpr const char* kImportBaseAnnotation = "banlieue.io/import-base";
inline constexpr const char* kForceReimportAnnotation = "banlieue.io/force-reimport";
// On a per-target import Job: its target (libvirt: the storage pool).
inline constexpr const char* kImportTargetAnnotation = "banlieue.io/import-target";

struct ImportJobParams {
  // What to import and where.
  std::string image_name;  // VMImage (cluster-scoped)
  std::string provider_namespace;
  std::string provider_name;
  std::string backend;  // plugin directory name under plugin_dir, e.g. "libvirt"
  std::string failure_domain;
  // One of the failure domain's attributes.importTargets (libvirt: a storage pool); empty: the
  // whole failure domain, as for every backend that publishes no import targets.
  std::string target;
  // From status.buildArtifact.
  std::string artifact_file;        // file name inside the artifacts volume
  std::string artifact_format;      // raw, qcow2 or iso
  std::string checksum;             // "<alg>:<hex>", verified before any backend write
  std::string pvc_name;             // the artifacts PVC (kairos: <osartifact>-artifacts)
  std::string artifacts_host_path;  // instead of the PVC: a node-local directory (dev nodes)
  std::string os_artifact_name;     // owner; empty: no owner reference
  std::string os_artifact_uid;
  std::string image_uid;  // owner; empty: no VMImage owner reference
  // How the pod runs.
  std::string job_namespace = kImageBuildNamespace;
  std::string service_account = kImportServiceAccount;
  std::string container_image = "localhost/banlieue:latest";
  std::string plugin_dir = "/usr/lib/banlieue/plugins";
  std::string plugin_sha256;  // the ProviderClass's spec.plugin.sha256; empty: none
  std::string log_level = "info";
  common::EnvironmentVariables proxy_env;  // HTTPS_PROXY, NO_PROXY: how the backend is reached
  int backoff_limit = 2;
  int active_deadline_seconds = 3600;
  // A one-shot re-import (banlieue.io/force-reimport) changes the name, so it never waits
  // for the old Job's deletion to finish.
  std::string generation_suffix;
};

// Pieces of the names of the Jobs banlieue makes (import and checksum Jobs): a stable
// 10-hex-digit hash of `text`, and `text` as lowercase alphanumerics and '-' (no leading or
// trailing '-') of at most `max` characters.
std::string jobNameHash(const std::string& text);
std::string jobNamePart(const std::string& text, size_t max);

// A label value for a name: the name itself when it is a valid label value, else a stable hash
// of it (the Job's labels select; its annotations carry the exact names).
std::string importLabelValue(const std::string& text);

// DNS-1123 name <= 63 characters: import-<image prefix>-<hash of every identifying field>
// (image, Provider, zone, OSArtifact uid, artifact file and checksum, generation suffix, and the
// target when there is one): a different artifact or target is a different Job, never a clash
// with the previous one.
std::string importJobName(const ImportJobParams& params);

// The batch/v1 Job manifest (JSON). Errors (reason ImportJobInvalid) name a missing field.
StatusOr<std::string> importJob(const ImportJobParams& params);

// What a Job says about its zone.
struct ImportOutcome {
  enum class State { kRunning, kSucceeded, kFailed };
  State state = State::kRunning;
  std::string reason;  // Importing, Imported, or a failure reason (import_exit.h)
  std::string message;
  std::string resolved_ref;  // on success, from the termination message
  int exit_code = -1;        // of the last import container that ended, -1 when none did
  bool retryable = false;    // a failed Job worth recreating unchanged
};

// True when `pod`'s import container ended with a status no retry mends (a checksum mismatch,
// a rejected artifact): every later attempt of its Job, on the same inputs, would end the same.
bool importPodFailedForGood(const rapidjson::Value& pod);

// `job` is the Job; `pod` its newest pod, or its pod that failed for good (nullptr when none
// is known). Completion comes from the Job's conditions, or from a pod that failed for good
// before the Job gives up; the reason from the pod's exit status and termination message.
ImportOutcome importOutcome(const rapidjson::Value& job, const rapidjson::Value* pod);

// The name of the zone row of an import: the failure domain, or <failure domain>/<target>.
std::string zoneRowName(const std::string& failure_domain, const std::string& target);

// The zone row for a failure domain, or for one import target of it
// (VMImage.status.perProvider[].zones[]).
api::ImageZone zoneRow(const std::string& failure_domain, const ImportOutcome& outcome,
                       const std::string& target = "");

}  // namespace banlieue::roles::images
