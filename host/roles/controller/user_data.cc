#include "host/roles/controller/user_data.h"

#include "host/common/utf8.h"

#include <banlieue/sdk/json.h>

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace banlieue::controller {
namespace {

Status invalid(const std::string& message) {
  return error(Code::kInvalidArgument, "InvalidUserData", message);
}

// Strict standard base64 (the API server's encoding of Secret data); nullopt on any other byte.
std::optional<std::string> decodeBase64(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int pad = 0;
    uint32_t bits = 0;
    for (size_t j = 0; j < 4; ++j) {
      char c = in[i + j];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
        bits <<= 6;
        continue;
      }
      int v = value(c);
      if (v < 0 || pad > 0) return std::nullopt;
      bits = (bits << 6) | static_cast<uint32_t>(v);
    }
    out.push_back(static_cast<char>((bits >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((bits >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(bits & 0xff));
  }
  return out;
}

bool endsWithIgnoringCase(const std::string& text, const std::string& suffix) {
  if (suffix.size() > text.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), text.rbegin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
}

}  // namespace

std::string UserDataRef::field() const {
  return std::string("VirtualMachine.spec.userData.") + (secret ? "secretRef" : "configMapRef");
}

StatusOr<std::optional<UserDataRef>> userDataRef(const api::VirtualMachineSpec& spec) {
  if (!spec.user_data) return std::optional<UserDataRef>();
  const auto& source = *spec.user_data;
  if (!source.secret_ref && !source.config_map_ref)
    return invalid("userData: exactly one of secretRef, configMapRef must be set (none were)");
  if (source.secret_ref && source.config_map_ref)
    return invalid(
        "userData: exactly one of secretRef, configMapRef must be set (more than one was)");
  const auto& selector = source.secret_ref ? *source.secret_ref : *source.config_map_ref;
  UserDataRef ref{.secret = source.secret_ref.has_value(),
                  .name = selector.name,
                  .key = selector.key.empty() ? kDefaultUserDataKey : selector.key};
  if (ref.name.empty()) return invalid(ref.field() + ".name must be set");
  return std::optional<UserDataRef>(std::move(ref));
}

StatusOr<std::string> extractUserData(const rapidjson::Value& object, const UserDataRef& ref) {
  std::string where = std::string(ref.secret ? "Secret " : "ConfigMap ") + ref.name;
  const auto* data = sdk::json::find(&object, "data");
  const rapidjson::Value* value = nullptr;
  if (data != nullptr && data->IsObject()) {
    auto it = data->FindMember(ref.key.c_str());
    if (it != data->MemberEnd() && it->value.IsString()) value = &it->value;
  }
  if (value == nullptr)
    return invalid(where + " has no data[" + ref.key + "] (" + ref.field() + ")");
  std::string_view stored(value->GetString(), value->GetStringLength());
  if (!ref.secret) return std::string(stored);
  auto decoded = decodeBase64(stored);
  if (!decoded) return invalid(where + " data[" + ref.key + "] is not base64");
  if (!common::isValidUtf8(*decoded))
    return invalid(where + " data[" + ref.key + "] is not UTF-8 text");
  return std::move(*decoded);
}

std::string renderUserData(std::string_view text, const api::VirtualMachine& vm) {
  const api::StaticIpamConfig* network =
      vm.spec.network_overrides.empty() ? nullptr : &vm.spec.network_overrides.front().static_;
  std::string domain = network != nullptr ? network->domain : std::string();
  std::string name = vm.metadata.name;
  std::string fqdn = name;
  if (!domain.empty() && !endsWithIgnoringCase(name, "." + domain)) fqdn = name + "." + domain;
  std::string dns;
  if (network != nullptr) {
    for (const auto& server : network->nameservers) dns += (dns.empty() ? "" : ",") + server;
  }
  const std::pair<std::string_view, std::string> values[] = {
      {"VM_NAME", name},
      {"FQDN", fqdn},
      {"IP", network != nullptr ? network->address : ""},
      {"PREFIX", network != nullptr && network->prefix > 0 ? std::to_string(network->prefix) : ""},
      {"GATEWAY", network != nullptr ? network->gateway : ""},
      {"DNS", dns},
      {"DOMAIN", domain},
  };

  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("${", pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find('}', open + 2);
    if (close == std::string_view::npos) break;
    std::string_view placeholder = text.substr(open + 2, close - open - 2);
    out.append(text.substr(pos, open - pos));
    auto known = std::find_if(std::begin(values), std::end(values),
                              [&](const auto& entry) { return entry.first == placeholder; });
    if (known != std::end(values)) {
      out += known->second;
    } else {
      out.append(text.substr(open, close - open + 1));
    }
    pos = close + 1;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace banlieue::controller
