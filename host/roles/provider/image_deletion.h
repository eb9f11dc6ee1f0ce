// What a Provider does with the backend copies of a VMImage it imported once the VMImage is
// deleted (issue #20, docs/adr/0037-image-deletion.md). Pure, so every outcome is unit-tested;
// ImageReconciler makes the calls and writes.
//
// A Provider that imports an image (a Url source for its class) first puts its own finalizer on
// the VMImage, before any import Job can write to the backend. When the VMImage is deleted it
// stops its import Jobs, then asks the plugin's delete_image for every failure domain of its
// row (for a per-target row, in that target only), keeping each zone's progress in that zone's
// row, and drops its finalizer once every zone is done. spec.template.retainOnDelete keeps the
// copies; so does a plugin without delete_image (NotSupportedByBackend), and a source that is
// no longer Url (what the row names then is the user's own template, never banlieue's to
// remove).
#pragma once

#include "host/plugin/plugin.h"
#include "host/roles/common/image_finalizer.h"

#include <rapidjson/document.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::roles::provider {

using roles::imageFinalizer;

// spec.template.retainOnDelete.
bool retainOnDelete(const rapidjson::Value& image);

// The kind of the image's source for a ProviderClass ("Url", "Template", ...), or "".
std::string sourceKindFor(const rapidjson::Value& image, const std::string& class_name);

// One zone row of this Provider's row still to be cleaned: a failure domain, or one import
// target of one (docs/adr/0053).
struct ZoneToDelete {
  std::string name;
  std::string resolved_ref;    // what the import reported there, may be empty
  std::string token;           // a delete_image task in flight
  std::string failure_domain;  // the row's failureDomain; empty: `name` is the failure domain
  std::string target;          // the row's import target; empty: none
};

// Every zone of the row not yet done (reason Deleted or Retained); the row may be null.
std::vector<ZoneToDelete> zonesToDelete(const rapidjson::Value* row);

// The delete_image request for one zone (sdk/schemas/delete_image.request.json): its failure
// domain, and its target when the row has one.
std::string deleteImageRequest(const rapidjson::Value& image, const ZoneToDelete& zone);

// One zone's delete_image answer, as its row shows it and what the reconciler does next.
struct ZoneDeletion {
  bool done = false;   // gone, or kept on purpose (Retained)
  std::string reason;  // Deleted, Retained, Deleting, ImageInUse, or the plugin's reason
  std::string message;
  std::string token;     // Deleting: the task to ask about next time
  bool warning = false;  // worth a Warning event (Retained by the backend, or a failure)
  std::optional<std::chrono::milliseconds> retry_after;  // when to ask again (not done)
};

ZoneDeletion zoneDeletion(const plugin::CallResult& result);

// The row while the VMImage is being deleted: `current` (this Provider's row, or null) with
// each zone named in `outcomes` replaced by its outcome, and the row's reason and message
// summing them up (Deleting, or Deleted once every zone is done).
rapidjson::Document deletionRow(const rapidjson::Value* current,
                                const std::string& provider_namespace,
                                const std::string& provider_name,
                                const std::vector<std::pair<ZoneToDelete, ZoneDeletion>>& outcomes);

}  // namespace banlieue::roles::provider
