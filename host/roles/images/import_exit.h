// The exit statuses of `banlieue image-import` and the Condition reason each one becomes in a
// VMImage.status.perProvider[].zones[] row (docs/adr/0013). The first four are the codes every
// subcommand shares (host/app/command.h); the rest say which stage failed, so the provider
// runtime can tell "fix the artifact" from "fix the Provider" from "try again" without parsing
// logs. The Job's termination message ({"reason","message"}) refines the reason when present
// (a plugin's own CamelCase reason such as PoolNotFound).
//
//   exit  reason                  meaning                                          retry?
//   0     Imported                the artifact is in the zone                      -
//   1     ImportFailed            unexpected failure                               yes
//   2     ImportJobInvalid        bad arguments (the Job spec is wrong)            no
//   3     ImportUnavailable       this binary has no image-import                  no
//   10    ChecksumMismatch        the artifact's digest differs; nothing written   no
//   11    ChecksumUnusable        checksum missing, malformed or unknown algorithm no
//   12    ArtifactUnreadable      artifact file missing or unreadable              no
//   13    PluginLoadFailed        plugin refused by the loader or lacks import     no
//   14    InputUnavailable        VMImage/Provider/credentials could not be read   yes
//   15    ProviderConnectFailed   instance_create failed (backend unreachable...)  yes
//   16    ImportRejected          the plugin refused the import (terminal code)    no
//   17    ImportRetryable         the plugin failed transiently or timed out       yes
//   18    ImportCancelled         SIGTERM before the import finished               yes
#pragma once

#include <string>

namespace banlieue::roles::images {

enum ImportExit : int {
  kImportOk = 0,
  kImportFailed = 1,
  kImportUsage = 2,
  kImportRoleUnavailable = 3,
  kImportChecksumMismatch = 10,
  kImportChecksumUnusable = 11,
  kImportArtifactUnreadable = 12,
  kImportPluginLoadFailed = 13,
  kImportInputUnavailable = 14,
  kImportConnectFailed = 15,
  kImportRejected = 16,
  kImportRetryable = 17,
  kImportCancelled = 18,
};

// The reason for an exit status (unknown statuses: ImportFailed).
std::string reasonForImportExit(int exit_code);

// Whether a Job that ended with this status is worth running again unchanged.
bool importExitRetryable(int exit_code);

}  // namespace banlieue::roles::images
