#include "host/roles/controller/pool_addressing.h"

#include <arpa/inet.h>

#include <cstdint>

namespace banlieue::controller {
namespace {

struct Span {
  uint32_t low = 0;
  uint32_t high = 0;  // inclusive
};

std::optional<uint32_t> parseIpv4(const std::string& text) {
  in_addr parsed{};
  if (text.empty() || inet_pton(AF_INET, text.c_str(), &parsed) != 1) return std::nullopt;
  return ntohl(parsed.s_addr);
}

std::string formatIpv4(uint32_t address) {
  in_addr out{htonl(address)};
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &out, text, sizeof text);
  return text;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// The entry's addresses; an empty optional when it does not parse, an inverted range is a
// parsable entry offering nothing (nullopt span inside).
std::optional<std::optional<Span>> parseEntry(const std::string& raw) {
  const std::string entry = trimmed(raw);
  if (auto slash = entry.find('/'); slash != std::string::npos) {
    auto base = parseIpv4(entry.substr(0, slash));
    const std::string bits = entry.substr(slash + 1);
    if (!base || bits.empty() || bits.size() > 2 ||
        bits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    const int prefix = std::stoi(bits);
    if (prefix > 32) return std::nullopt;
    const uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
    Span span{*base & mask, (*base & mask) | ~mask};
    if (prefix <= 30) {  // a network and a broadcast address to leave out
      ++span.low;
      --span.high;
    }
    return std::optional<Span>(span);
  }
  if (auto dash = entry.find('-'); dash != std::string::npos) {
    auto low = parseIpv4(trimmed(entry.substr(0, dash)));
    auto high = parseIpv4(trimmed(entry.substr(dash + 1)));
    if (!low || !high) return std::nullopt;
    if (*low > *high) return std::optional<Span>();
    return std::optional<Span>(Span{*low, *high});
  }
  auto single = parseIpv4(entry);
  if (!single) return std::nullopt;
  return std::optional<Span>(Span{*single, *single});
}

}  // namespace

AddressDraw drawAddress(const api::PoolAddressing& addressing, const std::set<std::string>& held) {
  AddressDraw draw;
  std::set<uint32_t> taken;
  for (const auto& address : held)
    if (auto parsed = parseIpv4(address)) taken.insert(*parsed);
  if (auto gateway = parseIpv4(addressing.gateway)) taken.insert(*gateway);
  for (const auto& entry : addressing.pool) {
    auto parsed = parseEntry(entry);
    if (!parsed) {
      draw.unparsable.push_back(entry);
      continue;
    }
    if (!*parsed) continue;  // an inverted range
    const Span span = **parsed;
    draw.usable += static_cast<int64_t>(span.high) - span.low + 1;
    if (draw.address) continue;
    // At most |taken| + 1 steps: every step past a taken address.
    for (uint64_t candidate = span.low; candidate <= span.high; ++candidate) {
      if (taken.count(static_cast<uint32_t>(candidate)) == 0) {
        draw.address = formatIpv4(static_cast<uint32_t>(candidate));
        break;
      }
    }
  }
  return draw;
}

std::string heldAddress(const api::VirtualMachineSpec& spec, const std::string& interface) {
  for (const auto& override : spec.network_overrides)
    if (override.name == interface) return override.static_.address;
  return "";
}

void assignAddress(api::VirtualMachineSpec& spec, const api::PoolAddressing& addressing,
                   const std::string& address) {
  api::NetworkOverride* target = nullptr;
  for (auto& override : spec.network_overrides)
    if (override.name == addressing.interface) target = &override;
  if (target == nullptr) {
    spec.network_overrides.push_back({.name = addressing.interface});
    target = &spec.network_overrides.back();
  }
  target->static_ = {.address = address,
                     .prefix = addressing.prefix,
                     .gateway = addressing.gateway,
                     .nameservers = addressing.nameservers,
                     .domain = addressing.domain};
}

}  // namespace banlieue::controller
