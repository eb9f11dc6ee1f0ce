// Read-your-writes for a controller that reads from informer caches (the ReplicaSet
// controller's "expectations"): after a write, the next reconcile of the same key waits until
// the cache holds the written resourceVersion (or newer), instead of comparing against a stale
// copy and writing the same thing again. An expectation lapses after `ttl`, so a lost watch
// event or a deleted object cannot wedge a key.
#pragma once

#include "host/runtime/informer.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace banlieue::runtime {

class WriteExpectations {
 public:
  explicit WriteExpectations(std::chrono::milliseconds ttl = std::chrono::seconds(10))
      : ttl_(ttl) {}

  // `owner` (the reconcile key) expects `object_key` in `cache` at `resource_version` or later.
  void expect(const std::string& owner, Informer* cache, const std::string& object_key,
              const std::string& resource_version);
  // True when every expectation of `owner` is met (met and lapsed ones are dropped).
  bool satisfied(const std::string& owner);

 private:
  struct Expectation {
    Informer* cache;
    std::string object_key;
    uint64_t resource_version;
    std::chrono::steady_clock::time_point deadline;
  };
  std::chrono::milliseconds ttl_;
  std::mutex mu_;
  std::map<std::string, std::vector<Expectation>> by_owner_;
};

}  // namespace banlieue::runtime
