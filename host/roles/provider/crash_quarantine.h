// Objects whose plugin call the previous process did not survive, read at start from the
// call journal (plugin/call_tracker.h) and kept away from the plugin for a while, so one object
// that crashes the plugin every time cannot crash-loop the whole Provider: each such object
// gets Ready=False with reason PluginCrashed and a Warning event, and is retried after a
// backoff that doubles with every crash it is suspected of (base, 2·base, … up to an hour).
// Every object in flight when the process died is a suspect: an innocent one is retried after
// one backoff and forgiven when its call returns; the culprit's backoff keeps growing.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace banlieue::roles::provider {

class CrashQuarantine {
 public:
  struct Suspect {
    std::string slot;
    std::string object;
    int crashes = 0;
    std::chrono::steady_clock::time_point until;
  };
  struct Hold {
    std::string message;
    std::chrono::milliseconds retry_after;
  };

  // An empty `dir` disables it. Takes the journal's leftover files (the previous process's).
  CrashQuarantine(std::filesystem::path dir, std::chrono::seconds base_backoff);

  // Set while `object_uid` must not reach the plugin.
  std::optional<Hold> hold(const std::string& object_uid) const;
  // A call for `object_uid` returned: the process survived it.
  void survived(const std::string& object_uid);
  size_t suspects() const;

  static constexpr std::chrono::hours kMaxBackoff{1};

 private:
  std::filesystem::path dir_;
  std::chrono::seconds base_;
  mutable std::mutex mutex_;
  std::map<std::string, Suspect> suspects_;
};

}  // namespace banlieue::roles::provider
