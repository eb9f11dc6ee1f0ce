// Times as the Kubernetes API writes them (metav1.Time): RFC 3339 in UTC, whole seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

namespace banlieue::sdk {

// "2026-12-03T08:00:00Z" for Unix seconds `epoch` (a backend's creation time, for example).
inline std::string rfc3339Utc(int64_t epoch) {
  const auto t = static_cast<std::time_t>(epoch);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[sizeof "1970-01-01T00:00:00Z"];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Now, the same way.
inline std::string utcNow() {
  return rfc3339Utc(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
}

}  // namespace banlieue::sdk
