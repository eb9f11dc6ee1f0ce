#include "plugins/proxmox/src/errors.h"

namespace banlieue::proxmox {

sdk::Status transportStatus(const TransportError& error, const std::string& context) {
  switch (error.kind()) {
    case TransportError::Kind::kTimeout:
      return {sdk::Code::kDeadlineExceeded, "Timeout", context + ": " + error.what()};
    case TransportError::Kind::kTls:
      return {sdk::Code::kUnavailable, "ConnectFailed",
              context + ": " + error.what() +
                  " (check spec.connection.caBundle; insecureSkipTLSVerify is for tests only)"};
    case TransportError::Kind::kProxy:
      return {sdk::Code::kUnavailable, "ProxyFailed",
              context + ": " + std::string(error.what()) +
                  " (check HTTPS_PROXY and NO_PROXY of the provider's pod)"};
    case TransportError::Kind::kConnect:
    case TransportError::Kind::kIo: break;
  }
  return {sdk::Code::kUnavailable, "ConnectFailed", context + ": " + error.what()};
}

}  // namespace banlieue::proxmox
