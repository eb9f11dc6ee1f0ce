// `banlieue image-checksum`: the digest of one artifact on a read-only volume, run by the
// imagebuilder's checksum Job (checksum_job.h). It prints the digest and writes it to the
// termination log as {"checksum":"<alg>:<hex>"}, or {"reason","message"} when the file cannot
// be read (exit 12, as image-import's ArtifactUnreadable).
#pragma once

#include "host/app/command.h"

namespace banlieue::roles::images {

void registerImageChecksumCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::images
