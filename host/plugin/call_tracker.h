// The plugin calls in flight, for what a stuck or crashing plugin leaves the host to do:
//  - overdue(): calls still running past their deadline plus a grace period. The ABI lets a
//    plugin ignore cancellation, and the host cannot interrupt a call, so the provider role
//    turns these into a failing liveness check and the kubelet restarts the process.
//  - a journal: with a directory set, a call naming an object (object_uid) leaves a small file
//    there while it runs, written before the call and removed after it returns. A file still
//    there at the next start names an object whose call the process did not survive (a
//    SIGSEGV in the plugin, or a kill after a hang); see roles/provider/crash_quarantine.h.
//    Its lines: slot, object, object uid, object generation, and "hung" once the watchdog
//    found the call overdue (markOverdueAsHung), so the next process can tell a hang from a
//    crash.
#pragma once

#include "host/common/status_or.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace banlieue::plugin {

struct CallOptions;

struct InFlightCall {
  std::string slot;
  std::string object;  // e.g. "TestMachine ns/name"; empty for calls about no object
  std::string object_uid;
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point deadline;
  bool hung = false;           // journaled as hung (markOverdueAsHung)
  bool observes_only = false;  // CallOptions::observes_only
};

class CallTracker {
 public:
  // Enables the journal in `dir` (created when missing).
  Status setJournal(const std::filesystem::path& dir);
  const std::filesystem::path& journal() const { return journal_; }

  uint64_t begin(const char* slot, const CallOptions& options,
                 std::chrono::steady_clock::time_point deadline);
  void end(uint64_t id);

  // How many calls that may act on the backend are running now (an observes_only call is not
  // counted), and which calls run ("reconcile of LibvirtMachine ns/name, ...").
  size_t inFlight() const;
  std::string describeInFlight() const;
  // Calls whose deadline passed more than `grace` before `now`, oldest first.
  std::vector<InFlightCall> overdue(
      std::chrono::milliseconds grace,
      std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) const;

  // overdue(), and each of those calls recorded as hung in its journal file (once), before the
  // failing liveness check gets the process killed.
  std::vector<InFlightCall> markOverdueAsHung(
      std::chrono::milliseconds grace,
      std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

  // The journal file of one object's call (the object's uid, sanitised).
  static std::filesystem::path journalFile(const std::filesystem::path& dir,
                                           const std::string& object_uid);
  static constexpr const char* kJournalPrefix = "inflight-";
  static constexpr const char* kHungMark = "hung";

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, InFlightCall> calls_;
  uint64_t next_id_ = 1;
  std::filesystem::path journal_;
};

}  // namespace banlieue::plugin
