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

CrashQuarantine::CrashQuarantine(std::filesystem::path dir, std::chrono::seconds base_backoff)
    : dir_(std::move(dir)), base_(base_backoff) {
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
      std::ifstream in(entry.path());
      std::getline(in, s.slot);
      std::getline(in, s.object);
      std::getline(in, uid);
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
    auto backoff = std::min<std::chrono::seconds>(
        base_ * (int64_t{1} << std::min(s.crashes - 1, 20)), kMaxBackoff);
    s.until = now + backoff;
    log->error(
        "the plugin's {} of {} did not return before the process ended (crash {}); "
        "holding it back for {} s",
        s.slot, s.object, s.crashes, backoff.count());
    suspects_.emplace(uid, std::move(s));
  }
}

std::optional<CrashQuarantine::Hold> CrashQuarantine::hold(const std::string& object_uid) const {
  std::lock_guard lock(mutex_);
  auto it = suspects_.find(object_uid);
  if (it == suspects_.end()) return std::nullopt;
  auto now = std::chrono::steady_clock::now();
  if (now >= it->second.until) return std::nullopt;
  const auto& s = it->second;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(s.until - now);
  return Hold{"the provider process ended during the plugin's " + s.slot + " of " + s.object +
                  " (" + std::to_string(s.crashes) + (s.crashes == 1 ? " time" : " times") +
                  "); retrying in " + std::to_string((left.count() + 999) / 1000) + " s",
              left};
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
