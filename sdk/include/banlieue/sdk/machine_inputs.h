// What every plugin reads the same way from the machine object the host passes it
// (header-only, like the rest of the SDK): the place fields, which Cluster API's copies of a
// template may leave to the controller, and the format of the user data the provider runtime
// injects (docs/adr/0050).
#pragma once

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/status.h>

#include <string>

namespace banlieue::sdk {

// The reason of a machine that reached its plugin without its place (datacenter, pool, node...).
inline constexpr const char* kPlacementUnresolved = "PlacementUnresolved";
// The reason of user data in a format the plugin cannot deliver to its guests.
inline constexpr const char* kUserDataFormatUnsupported = "UserDataFormatUnsupported";

// The injected spec.userDataFormat: "cloud-config" (also when absent, as for a VirtualMachine's
// userData) or "ignition" (a Cluster API bootstrap Secret's `format`).
inline constexpr const char* kCloudConfig = "cloud-config";
inline constexpr const char* kIgnition = "ignition";

// A place field of `kind`'s spec. Empty means nothing placed the machine: neither its author
// nor the controller, from a failure domain. A FailedPrecondition, not InvalidSpec: the object
// is valid and becomes placeable once it has a failure domain.
inline std::string requirePlace(const rapidjson::Value* spec, const char* field,
                                const std::string& kind) {
  std::string value = json::stringOr(spec, field);
  if (value.empty()) {
    throw Error(Code::kFailedPrecondition, kPlacementUnresolved,
                kind + " spec." + field +
                    " is not set: state it, or give the machine a failure domain to be placed "
                    "in (a Cluster API Machine's spec.failureDomain)");
  }
  return value;
}

// The format of spec.userData, as the provider runtime passed it.
inline std::string userDataFormat(const rapidjson::Value* spec) {
  return json::stringOr(spec, "userDataFormat", kCloudConfig);
}

// For plugins whose guests take cloud-config only (a NoCloud seed): refuses any other format.
inline void requireCloudConfig(const rapidjson::Value* spec, const std::string& kind) {
  if (json::stringOr(spec, "userData").empty()) return;
  std::string format = userDataFormat(spec);
  if (format != kCloudConfig) {
    throw Error(Code::kInvalidArgument, kUserDataFormatUnsupported,
                kind + " delivers user data as a cloud-init NoCloud seed; format '" + format +
                    "' (the bootstrap Secret's `format`) cannot reach the guest");
  }
}

}  // namespace banlieue::sdk
