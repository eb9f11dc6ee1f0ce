// The proxy settings a role passes on to the pods it makes (provider Deployments, import
// Jobs): a platform team sets HTTPS_PROXY and NO_PROXY once, on the operator, and every pod
// that talks to a backend gets them (docs/adr/0029-one-https-client-for-plugins.md). The
// plugins read them through banlieue/sdk/proxy.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace banlieue::common {

using EnvironmentVariables = std::vector<std::pair<std::string, std::string>>;

// HTTPS_PROXY, https_proxy, NO_PROXY and no_proxy as this process has them, set and non-empty
// ones only, in that order.
EnvironmentVariables proxyEnvironment();

}  // namespace banlieue::common
