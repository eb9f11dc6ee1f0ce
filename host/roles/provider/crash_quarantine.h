// Objects whose plugin call the previous process did not survive, read at start from the
// call journal (plugin/call_tracker.h) and kept away from the plugin, so one object that
// crashes or hangs the plugin every time cannot crash-loop the whole Provider: each such object
// gets Ready=False with reason PluginCrashed (or PluginHung, when the watchdog had found its
// call overdue) and a Warning event. Every object in flight when the process died is a
// suspect: an innocent one is retried after one backoff and forgiven when its call returns.
// A suspect is retried after a backoff that doubles with every crash in a row (base, 2·base,
// …); after `quarantine_after` in a row it is quarantined: no more calls until its spec
// changes (metadata.generation moves) or a user clears it (MachineReconciler: the annotation
// banlieue.io/clear-quarantine).
#pragma once

#include <chrono>
#include <cstdint>
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
    int crashes = 0;         // in a row
    bool hung = false;       // the last one was a hang the watchdog recorded, not a crash
    int64_t generation = 0;  // of the object in the call that did not return; 0: unknown
    std::chrono::steady_clock::time_point until;
  };
  struct Hold {
    std::string reason;  // PluginCrashed or PluginHung
    std::string message;
    // When to look again; zero while quarantined (the object's own change brings it back).
    std::chrono::milliseconds retry_after{0};
  };

  // An empty `dir` disables it. Takes the journal's leftover files (the previous process's).
  CrashQuarantine(std::filesystem::path dir, std::chrono::seconds base_backoff,
                  int quarantine_after = kDefaultQuarantineAfter);

  // Set while the object must not reach the plugin. A quarantined object whose generation
  // moved since the call it did not survive is forgiven here.
  std::optional<Hold> hold(const std::string& object_uid, int64_t generation);
  // A call for `object_uid` returned: the process survived it.
  void survived(const std::string& object_uid);
  // A user lifted the hold: the object goes to the plugin again, its count starts afresh.
  void clear(const std::string& object_uid) { survived(object_uid); }
  size_t suspects() const;

  static constexpr std::chrono::hours kMaxBackoff{1};
  static constexpr int kDefaultQuarantineAfter = 3;

 private:
  std::filesystem::path dir_;
  std::chrono::seconds base_;
  int quarantine_after_;
  mutable std::mutex mutex_;
  std::map<std::string, Suspect> suspects_;
};

}  // namespace banlieue::roles::provider
