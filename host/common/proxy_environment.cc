#include "host/common/proxy_environment.h"

#include <cstdlib>

namespace banlieue::common {

EnvironmentVariables proxyEnvironment() {
  EnvironmentVariables out;
  for (const char* name : {"HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') out.emplace_back(name, value);
  }
  return out;
}

}  // namespace banlieue::common
