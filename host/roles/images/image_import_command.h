// `banlieue image-import`: one artifact into one failure domain of one Provider, run as a Job
// (import_job.h) or by hand. In order, and stopping at the first failure with the exit status
// of import_exit.h: the checksum is parsed and the artifact verified against it (nothing is
// loaded or connected before that, so a corrupted or unverifiable artifact never reaches a
// backend); the VMImage and Provider are read (API server, or --image-file/--provider-file);
// the plugin is loaded from --plugin-dir under the loader's rules; an instance is created with
// the credentials from --credentials-dir; import_image is driven until done, with progress
// logged. The outcome is written as JSON to the termination log for the Job's watcher. With
// --target (one of the failure domain's importTargets) the request names that target and the
// plugin imports there only.
#pragma once

#include "host/app/command.h"

#include <cstdint>
#include <string>

namespace banlieue::roles::images {

void registerImageImportCommand(CLI::App& app, app::Action& action);

// One import_image request (sdk/schemas/import_image.request.json).
struct ImportRequestFields {
  std::string image_json;  // the VMImage, as JSON
  std::string artifact_path;
  std::string format;
  std::string sha256;  // hex
  uint64_t size_bytes = 0;
  std::string failure_domain;
  std::string target;  // --target; empty: left out of the request
  std::string token;   // the task in flight; empty: none
};
std::string importImageRequest(const ImportRequestFields& fields);

}  // namespace banlieue::roles::images
