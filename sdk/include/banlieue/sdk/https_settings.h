// How a plugin reaches an HTTPS backend for one Provider: the TLS options from the Provider's
// connection (the CA bundle the host resolved, else spec.connection.caBundle.inline, and
// insecureSkipTLSVerify with a warning in the log) and the proxy from the provider pod's
// environment (HTTPS_PROXY, NO_PROXY; the log says when the endpoint goes through one). Used by
// instance_create of the vSphere and Proxmox plugins; docs/adr/0029.
#pragma once

#include <banlieue/sdk/host.h>
#include <banlieue/sdk/https.h>
#include <banlieue/sdk/json.h>
#include <banlieue/sdk/payloads.h>
#include <banlieue/sdk/proxy.h>
#include <banlieue/sdk/status.h>

#include <stdexcept>
#include <string>

namespace banlieue::sdk::https {

struct ConnectionSettings {
  TlsOptions tls;
  ProxySettings proxy;
};

// Throws sdk::Error (INVALID_ARGUMENT, reason ProxyInvalid) when the pod's proxy settings are
// malformed.
inline ConnectionSettings connectionSettings(const InstanceConfig& config,
                                             const Endpoint& endpoint) {
  const std::string provider = config.provider_namespace + "/" + config.provider_name;
  ConnectionSettings settings;
  settings.tls.insecure_skip_verify = config.insecure_skip_tls_verify;
  settings.tls.ca_bundle_pem =
      config.ca_bundle.empty() ? json::stringOr(config.provider, "spec.connection.caBundle.inline")
                               : config.ca_bundle;
  if (settings.tls.insecure_skip_verify) {
    BANLIEUE_LOG(kWarn, "provider " + provider + ": TLS verification of " + endpoint.origin() +
                            " is OFF (insecureSkipTLSVerify); use a caBundle outside tests");
  }
  try {
    settings.proxy = ProxySettings::fromEnvironment();
  } catch (const std::invalid_argument& e) {
    throw Error(Code::kInvalidArgument, "ProxyInvalid",
                std::string("the provider's environment: ") + e.what());
  }
  if (auto via = settings.proxy.proxyFor(endpoint.host, endpoint.port)) {
    BANLIEUE_LOG(kInfo, "provider " + provider + ": " + endpoint.origin() + " through proxy " +
                            via->origin() + " (HTTPS_PROXY; NO_PROXY does not name it)");
  }
  return settings;
}

}  // namespace banlieue::sdk::https
