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

struct UserData {
  std::string text;
  // Empty for a VM's rendered userData (cloud-config); a Cluster API bootstrap Secret's
  // `format` otherwise (cloud-config or ignition).
  std::string format;
};

// The user data `object` refers to; nullopt when it refers to none. Two kinds of Secret may be
// read, and no other (an annotation edited to name another Secret reads nothing):
// - the object's own rendered userData (docs/adr/0026): its type, and the object's controller
//   owner as the Secret's;
// - with banlieue.io/user-data-key: value, a Cluster API bootstrap data Secret (docs/adr/0050):
//   Cluster API's type, labelled with the object's own cluster name.
// Errors, by reason: UserDataNotFound (no such Secret, or not one that may be read this way),
// UserDataStale (the Secret is newer than the object: the controller has not re-applied it
// yet), or the API's own.
StatusOr<std::optional<UserData>> resolveUserData(kube::KubeClient& client,
                                                  const rapidjson::Value& object);

// Puts the text into `object` as spec.userData (created when missing), and a format other than
// cloud-config as spec.userDataFormat, which plugins read through banlieue/sdk/machine_inputs.h.
void injectUserData(rapidjson::Value& object, const UserData& data,
                    rapidjson::Document::AllocatorType& a);

}  // namespace banlieue::roles::provider
