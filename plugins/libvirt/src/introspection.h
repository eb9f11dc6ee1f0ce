// introspect: one failure domain per libvirt host. The Provider's declared storage classes
// (pool targets) and network classes (network or bridge targets) are checked against what
// exists and is active; only the usable ones are published. Features come from the host's
// capabilities and domain capabilities.
#pragma once

#include "plugins/libvirt/src/connection.h"

#include <banlieue/sdk/provider.h>

namespace banlieue::libvirt {

// A failure domain name from a host name: lower case, [a-z0-9-], trimmed to 63 characters.
std::string failureDomainName(std::string_view hostname);

sdk::Status introspectHost(Connection& connection, const sdk::Call& call,
                           const rapidjson::Value* provider, sdk::Reply& reply,
                           std::string* failure_domain_out);

}  // namespace banlieue::libvirt
