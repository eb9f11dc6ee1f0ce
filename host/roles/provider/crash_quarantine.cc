#include "host/roles/provider/crash_quarantine.h"

#include "host/common/logging.h"
#include "host/plugin/call_tracker.h"

#include <algorithm>
#include <fstream>

namespace banlieue::roles::provider {
namespace {

// The journal counts crashes per object in crashes-<uid>, beside its inflight-<uid> records.
std::filesystem::path crashesFile(const std::filesystem::path& dir, const std::string& uid) {
  auto inflight = plugin::CallTracker::journalFile(dir, uid).filename().string();
  return dir /
         ("crashes-" + inflight.substr(std::string(plugin::CallTracker::kJournalPrefix).size()));
}

}  // namespace

CrashQuarantine::CrashQuarantine(std::filesystem::path dir, std::chrono::seconds base_backoff,
                                 int quarantine_after)
    : dir_(std::move(dir)), base_(base_backoff), quarantine_after_(std::max(1, quarantine_after)) {
  if (dir_.empty()) return;
  auto log = common::logger("provider");
  std::error_code ec;
  auto now = std::chrono::steady_clock::now();
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::string file = entry.path().filename().string();
    if (file.rfind(plugin::CallTracker::kJournalPrefix, 0) != 0) continue;
    Suspect s;
    std::string uid;
    {
      // slot, object, uid, generation, then "hung" when the watchdog marked the call; a
      // record written by an older version stops after the uid.
      std::ifstream in(entry.path());
      std::getline(in, s.slot);
      std::getline(in, s.object);
      std::getline(in, uid);
      for (std::string line; std::getline(in, line);) {
        if (line == plugin::CallTracker::kHungMark) {
          s.hung = true;
        } else if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) {
          s.generation = std::stoll(line);
        }
      }
    }
    std::filesystem::remove(entry.path(), ec);
    if (uid.empty()) continue;
    auto counted = crashesFile(dir_, uid);
    {
      std::ifstream in(counted);
      in >> s.crashes;
    }
    s.crashes = std::max(0, s.crashes) + 1;
    std::ofstream(counted) << s.crashes << "\n";
    const char* what = s.hung ? "hung past its deadline and grace" : "did not return";
    if (s.crashes >= quarantine_after_) {
      log->error(
          "the plugin's {} of {} {} before the process ended ({} times in a row); quarantined "
          "until its spec changes or the annotation banlieue.io/clear-quarantine is set",
          s.slot, s.object, what, s.crashes);
    } else {
      auto backoff = std::min<std::chrono::seconds>(
          base_ * (int64_t{1} << std::min(s.crashes - 1, 20)), kMaxBackoff);
      s.until = now + backoff;
      log->error(
          "the plugin's {} of {} {} before the process ended ({} in a row); holding it back "
          "for {} s",
          s.slot, s.object, what, s.crashes, backoff.count());
    }
    suspects_.emplace(uid, std::move(s));
  }
}

std::optional<CrashQuarantine::Hold> CrashQuarantine::hold(const std::string& object_uid,
                                                           int64_t generation) {
  std::unique_lock lock(mutex_);
  auto it = suspects_.find(object_uid);
  if (it == suspects_.end()) return std::nullopt;
  const auto& s = it->second;
  Hold held;
  held.reason = s.hung ? "PluginHung" : "PluginCrashed";
  std::string what =
      s.hung ? "the plugin's " + s.slot + " of " + s.object +
                   " did not return within its deadline and grace, and the "
                   "provider process was restarted"
             : "the provider process ended during the plugin's " + s.slot + " of " + s.object;
  std::string times =
      " (" + std::to_string(s.crashes) + (s.crashes == 1 ? " time" : " times in a row") + ")";
  if (s.crashes >= quarantine_after_) {
    if (generation != s.generation) {
      lock.unlock();
      common::logger("provider")
          ->info("{}: its spec changed (generation {} -> {}): out of quarantine", s.object,
                 s.generation, generation);
      survived(object_uid);
      return std::nullopt;
    }
    held.message = what + times +
                   "; quarantined: no more calls until its spec changes or the annotation "
                   "banlieue.io/clear-quarantine is set";
    return held;
  }
  auto now = std::chrono::steady_clock::now();
  if (now >= s.until) return std::nullopt;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(s.until - now);
  held.message =
      what + times + "; retrying in " + std::to_string((left.count() + 999) / 1000) + " s";
  held.retry_after = left;
  return held;
}

void CrashQuarantine::survived(const std::string& object_uid) {
  {
    std::lock_guard lock(mutex_);
    if (suspects_.erase(object_uid) == 0) return;
  }
  std::error_code ec;
  std::filesystem::remove(crashesFile(dir_, object_uid), ec);
}

size_t CrashQuarantine::suspects() const {
  std::lock_guard lock(mutex_);
  return suspects_.size();
}

}  // namespace banlieue::roles::provider
