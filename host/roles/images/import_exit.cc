#include "host/roles/images/import_exit.h"

namespace banlieue::roles::images {

std::string reasonForImportExit(int exit_code) {
  switch (exit_code) {
    case kImportOk: return "Imported";
    case kImportUsage: return "ImportJobInvalid";
    case kImportRoleUnavailable: return "ImportUnavailable";
    case kImportChecksumMismatch: return "ChecksumMismatch";
    case kImportChecksumUnusable: return "ChecksumUnusable";
    case kImportArtifactUnreadable: return "ArtifactUnreadable";
    case kImportPluginLoadFailed: return "PluginLoadFailed";
    case kImportInputUnavailable: return "InputUnavailable";
    case kImportConnectFailed: return "ProviderConnectFailed";
    case kImportRejected: return "ImportRejected";
    case kImportRetryable: return "ImportRetryable";
    case kImportCancelled: return "ImportCancelled";
    default: return "ImportFailed";
  }
}

bool importExitRetryable(int exit_code) {
  switch (exit_code) {
    case kImportFailed:
    case kImportInputUnavailable:
    case kImportConnectFailed:
    case kImportRetryable:
    case kImportCancelled: return true;
    default: return false;
  }
}

}  // namespace banlieue::roles::images
