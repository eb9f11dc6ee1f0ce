// VirtualMachine userData: which object holds it (exactly one of a Secret or a ConfigMap in the
// VM's namespace, key defaulting to `user-data`), reading it out of that object, and rendering
// the fixed placeholder set. The content is never logged and never put in an error message.
#pragma once

#include "host/api/virtual_machine.h"
#include "host/common/status_or.h"

#include <rapidjson/fwd.h>

#include <optional>
#include <string>
#include <string_view>

namespace banlieue::controller {

inline constexpr const char* kDefaultUserDataKey = "user-data";

struct UserDataRef {
  bool secret = false;  // else a ConfigMap
  std::string name;
  std::string key;
  // "VirtualMachine.spec.userData.secretRef" or "...configMapRef", for messages.
  std::string field() const;
};

// nullopt when the VM has no userData; InvalidArgument (reason InvalidUserData) when it names
// none or both sources, or a source without a name.
StatusOr<std::optional<UserDataRef>> userDataRef(const api::VirtualMachineSpec& spec);

// The text under ref.key of a Secret (base64 data, must be UTF-8) or ConfigMap (data). Errors
// name the object and key, never the content.
StatusOr<std::string> extractUserData(const rapidjson::Value& object, const UserDataRef& ref);

// Replaces ${VM_NAME} ${FQDN} ${IP} ${PREFIX} ${GATEWAY} ${DNS} ${DOMAIN} in one pass (a value
// is never re-scanned) and leaves every other ${...} alone. Network values come from the first
// networkOverrides entry; without one they are empty. ${FQDN} is <name>.<domain>, the name alone
// when there is no domain, and the name unchanged when it already ends in .<domain>.
std::string renderUserData(std::string_view text, const api::VirtualMachine& vm);

}  // namespace banlieue::controller
