// What this Provider's import Jobs for one built Url VMImage should be, and what its row says
// about them (docs/adr/0015). Pure: the image reconciler lists the Jobs and pods, calls
// planImports, then creates and deletes what the plan says and applies its row.
//
// One Job per failure domain (roles::images::importJob), or, for a failure domain that publishes
// attributes.importTargets (libvirt: its storage pools), one per target with a row of its own
// named <failureDomain>/<target> (docs/adr/0053). Jobs are found again by their annotations:
//   - without a force-reimport token, any Job of the same artifact and zone is kept (the newest
//     when several), so a Job made for a token that was later removed is not redone;
//   - a new value of the VMImage annotation banlieue.io/force-reimport is a one-shot: each
//     Provider runs one Job per zone named after the token, which records that the token was
//     acted on; setting the same value again does nothing, removing it does nothing;
//   - Jobs of another artifact, another zone or a superseded token are deleted;
//   - a Job that failed for a retryable reason is deleted `retry_after` after it failed and
//     made again; a terminal failure stays on the row until the artifact or token changes.
// Finished Jobs are kept as the record of what was imported (a TTL would make the runtime
// import again); they are owned by the VMImage and the OSArtifact, so deleting the image
// collects them.
#pragma once

#include "host/runtime/object_helpers.h"

#include "host/api/vm_class.h"
#include "host/common/proxy_environment.h"
#include "host/roles/images/import_progress.h"
#include "host/roles/provider/image_row.h"

#include <rapidjson/document.h>

#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::roles::provider {

// Fixed for the process.
struct ImportSettings {
  std::string backend;
  std::string container_image;  // the ProviderClass's image; empty: no Jobs can be run
  std::string plugin_dir;       // where plugins live inside that image
  std::string plugin_sha256;    // the class's spec.plugin.sha256, passed on to the Jobs
  std::string job_namespace;
  std::string artifacts_host_root;  // dev nodes: hostPath <root>/<pvcRef> instead of the PVC
  std::string log_level = "info";
  common::EnvironmentVariables proxy_env;  // the provider's HTTPS_PROXY and NO_PROXY
  bool plugin_imports = false;             // describe: operations.importImage
  std::vector<std::string> image_formats;  // describe: imageFormats (empty: any)
  std::chrono::seconds retry_after{300};
};

// One of this Provider's import Jobs of the image, with its newest pod (null when none).
struct ExistingImportJob {
  const rapidjson::Value* job = nullptr;
  const rapidjson::Value* pod = nullptr;
  // The last progress line of a running pod's log (images/import_progress.h), when read.
  std::optional<images::ImportProgress> progress;
};

// How often a zone whose import runs is looked at again, for its progress.
inline constexpr std::chrono::seconds kImportProgressPoll{5};

struct ImportPlan {
  std::vector<std::string> create;  // Job manifests
  std::vector<std::string> remove;  // Job names (in the job namespace)
  // The row: zones (one per failure domain, or per import target of one), readiness (every
  // zone Ready) and why.
  std::vector<api::ImageZone> zones;
  bool ready = false;
  std::string reason;
  std::string message;
  std::string resolved_ref;  // when every zone resolved to the same reference
  std::optional<std::chrono::seconds> requeue_after;
};

// The artifact format image-import is given: iso for ISO builds, else from the file name
// (.qcow2, .raw; raw by default).
std::string importArtifactFormat(const std::string& artifact_kind, const std::string& file);

// The force-reimport token of a VMImage (annotation banlieue.io/force-reimport), trimmed.
std::string forceReimportToken(const rapidjson::Value& image);

// The plan for a VMImage whose buildArtifact is Ready. `now` is Unix seconds.
ImportPlan planImports(const rapidjson::Value& image, const ImageRowContext& context,
                       const ImportSettings& settings, const std::vector<ExistingImportJob>& jobs,
                       std::time_t now);

// Writes the plan's readiness, reason, message, resolvedRef and zones into a row built by
// buildImageRow.
void applyImportPlan(rapidjson::Document& row, const ImportPlan& plan);

using runtime::parseRfc3339;

}  // namespace banlieue::roles::provider
