// base64 decoding of Kubernetes data fields (Secret data, kubeconfig *-data): the standard
// alphabet, padding optional, line breaks and spaces ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace banlieue::common {

// nullopt when `in` holds a character outside the alphabet.
std::optional<std::string> decodeBase64(std::string_view in);

// Standard alphabet, padded (what Secret data must hold).
std::string encodeBase64(std::string_view bytes);

}  // namespace banlieue::common
