#include "host/runtime/write_expectations.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <charconv>
#include <optional>

namespace banlieue::runtime {
namespace {

// resourceVersions are opaque to clients, but the API server's are etcd revisions: decimal and
// increasing. Anything else is never waited for.
std::optional<uint64_t> parseVersion(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

void WriteExpectations::expect(const std::string& owner, Informer* cache,
                               const std::string& object_key, const std::string& resource_version) {
  auto version = parseVersion(resource_version);
  if (!version || cache == nullptr) return;
  std::lock_guard lock(mu_);
  by_owner_[owner].push_back(
      {cache, object_key, *version, std::chrono::steady_clock::now() + ttl_});
}

bool WriteExpectations::satisfied(const std::string& owner) {
  std::lock_guard lock(mu_);
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return true;
  auto now = std::chrono::steady_clock::now();
  auto& list = it->second;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const Expectation& e) {
                              if (now >= e.deadline) return true;
                              auto object = e.cache->get(e.object_key);
                              if (!object) return false;
                              auto seen = parseVersion(
                                  sdk::json::stringOr(object.get(), "metadata.resourceVersion"));
                              return !seen || *seen >= e.resource_version;
                            }),
             list.end());
  bool met = list.empty();
  if (met) by_owner_.erase(it);
  return met;
}

}  // namespace banlieue::runtime
