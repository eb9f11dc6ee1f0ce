#include "plugins/vsphere/src/errors.h"

namespace banlieue::vsphere {

sdk::Status transportStatus(const TransportError& error) {
  switch (error.kind()) {
    case TransportError::Kind::kTls:
      return {sdk::Code::kUnavailable, "ConnectFailed",
              std::string(error.what()) +
                  " (check spec.connection.caBundle; insecureSkipTLSVerify is for tests only)"};
    case TransportError::Kind::kTimeout:
      return {sdk::Code::kDeadlineExceeded, "Timeout", error.what()};
    case TransportError::Kind::kProxy:
      return {
          sdk::Code::kUnavailable, "ProxyFailed",
          std::string(error.what()) + " (check HTTPS_PROXY and NO_PROXY of the provider's pod)"};
    case TransportError::Kind::kConnect:
    case TransportError::Kind::kIo: break;
  }
  return {sdk::Code::kUnavailable, "ConnectFailed", error.what()};
}

void endTask(sdk::Reply& reply) {
  reply.body().RemoveMember("operation");
}

void endFailedTask(sdk::Reply& reply) {
  reply.setOperation(kEndedTaskToken, "the previous task finished");
}

}  // namespace banlieue::vsphere
