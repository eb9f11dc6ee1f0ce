// Rendered userData travels to the provider in a Secret of the controller's, never in a custom
// resource (docs/adr/0026). The infrastructure object names that Secret and the revision it was
// built against in two annotations; the provider runtime reads the Secret and hands the text to
// the plugin inside the call's request only.
#pragma once

#include "host/api/user_data_contract.h"
#include "host/api/virtual_machine.h"

#include <rapidjson/document.h>

#include <optional>
#include <string>

namespace banlieue::controller {

using api::kRenderedUserDataKey;
using api::kRenderedUserDataType;
using api::kUserDataOptInLabel;
using api::kUserDataRevisionAnnotation;
using api::kUserDataSecretAnnotation;

// What the infrastructure object carries about a VM's userData.
struct UserDataReference {
  std::string secret;
  std::string revision;
};

// Whether a Secret opted in to being used as userData (the label, value "true").
bool optedInAsUserData(const rapidjson::Value& secret);

// `<vm>-rendered-userdata`; a name too long for a Secret keeps its start and gains a hash of the
// whole.
std::string renderedUserDataSecretName(const std::string& vm_name);

// The Secret to apply: type, label owned-by, controller ownerReference to the VM, and the text.
rapidjson::Document renderedUserDataSecret(const api::VirtualMachine& vm, const std::string& text);

// The text of a rendered Secret as read back; nullopt when it holds none or not base64.
std::optional<std::string> renderedUserDataText(const rapidjson::Value& secret);

}  // namespace banlieue::controller
