// The provider's half of docs/adr/0026: an infrastructure object names the Secret holding its
// VM's rendered userData (annotations); before a reconcile call the provider reads that Secret
// and puts the text into the call's copy of the object as spec.userData, where plugins have
// always read it. The text is never written back to the API and never logged.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <optional>
#include <string>

namespace banlieue::roles::provider {

// The rendered userData `object` refers to; nullopt when it refers to none. Refuses a Secret
// that is not the object's own rendered userData (its type, and a controller owner that is not
// the object's: an annotation edited to name another Secret reads nothing). Errors, by reason:
// UserDataNotFound (no such Secret, or not one that may be read this way), UserDataStale (the
// Secret is newer than the object: the controller has not re-applied it yet), or the API's own.
StatusOr<std::optional<std::string>> resolveUserData(kube::KubeClient& client,
                                                     const rapidjson::Value& object);

// Puts `text` into `object` as spec.userData (created when missing).
void injectUserData(rapidjson::Value& object, const std::string& text,
                    rapidjson::Document::AllocatorType& a);

}  // namespace banlieue::roles::provider
