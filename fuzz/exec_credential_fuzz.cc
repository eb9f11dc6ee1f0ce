// The standard output of a kubeconfig exec credential plugin as the client reads it
// (parseExecCredential). Any bytes must give a credential or an Unauthenticated Status.
// Property: an accepted credential carries a token or a client certificate.
#include "host/kube/config.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view output(reinterpret_cast<const char*>(data), size);
  auto credential = banlieue::kube::parseExecCredential(output, "fuzz: 'plugin'");
  if (credential.ok()) {
    if (credential->token.empty() && credential->client_cert_pem.empty()) std::abort();
  } else if (credential.status().code() != banlieue::Code::kUnauthenticated) {
    std::abort();
  }
  return 0;
}
