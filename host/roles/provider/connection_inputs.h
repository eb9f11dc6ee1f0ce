// What a plugin instance is created from: the Provider object, the decoded data of its
// credentials Secret, and its CA bundle resolved to PEM whichever form the Provider used
// (inline, a ConfigMap key or a Secret key). The host resolves the bundle so every plugin reads
// one field (spec.connection.caBundle.data) and none needs API access of its own.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <map>
#include <string>

namespace banlieue::roles::provider {

struct ConnectionInputs {
  std::string config_json;  // instance_create's config (holds secrets: never log it)
  // Changes exactly when the instance must be re-created: the Provider's spec.connection, the
  // credentials Secret's content, the CA bundle's content. A digest, so no secret is kept in
  // the clear beside the config.
  std::string fingerprint;
};

// Pure: builds the config from what was read. `ca_pem` empty means no bundle.
ConnectionInputs buildConnectionInputs(const rapidjson::Value& provider,
                                       const std::map<std::string, std::string>& credentials,
                                       const std::string& ca_pem);

// Reads the credentials Secret and the CA bundle source named by the Provider (in its
// namespace) and builds the inputs. Reasons: CredentialsNotFound, CredentialsForbidden,
// CABundleNotFound, CABundleKeyMissing, CABundleInvalid (more than one source, or none set).
StatusOr<ConnectionInputs> readConnectionInputs(kube::KubeClient& client,
                                                const rapidjson::Value& provider);

// Whether a failure of readConnectionInputs is an answer about the inputs (the Secret is gone,
// forbidden or malformed: disconnect, so nothing runs on stale credentials) rather than the
// apiserver not answering (unavailable, a timeout, a 5xx: keep the instance that is connected,
// its machines keep being served, and read again soon). The chaos run (issue #26) saw a
// provider disconnected for minutes after an apiserver restart.
bool inputsFailureIsAnAnswer(const Status& failure);

}  // namespace banlieue::roles::provider
