#include "host/plugin/call_tracker.h"

#include "host/plugin/plugin.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace banlieue::plugin {

Status CallTracker::setJournal(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return error(Code::kFailedPrecondition, "StateDirUnusable",
                 "cannot create " + dir.string() + ": " + ec.message());
  }
  std::lock_guard lock(mutex_);
  journal_ = dir;
  return Status::ok();
}

std::filesystem::path CallTracker::journalFile(const std::filesystem::path& dir,
                                               const std::string& object_uid) {
  std::string safe;
  for (char c : object_uid) safe.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
  return dir / (kJournalPrefix + safe);
}

uint64_t CallTracker::begin(const char* slot, const CallOptions& options,
                            std::chrono::steady_clock::time_point deadline) {
  InFlightCall call{
      slot,     options.object, options.object_uid,   std::chrono::steady_clock::now(),
      deadline, false,          options.observes_only};
  std::filesystem::path journal;
  uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    journal = journal_;
    calls_.emplace(id, call);
  }
  if (!journal.empty() && !options.object_uid.empty() && !options.observes_only) {
    // Plain write(2), no fsync: the file must outlive the process, not the node.
    std::string record = call.slot + "\n" + call.object + "\n" + call.object_uid + "\n" +
                         std::to_string(options.object_generation) + "\n";
    auto path = journalFile(journal, options.object_uid);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      (void)!::write(fd, record.data(), record.size());
      ::close(fd);
    }
  }
  return id;
}

size_t CallTracker::inFlight() const {
  std::lock_guard lock(mutex_);
  return static_cast<size_t>(std::count_if(
      calls_.begin(), calls_.end(), [](const auto& entry) { return !entry.second.observes_only; }));
}

std::string CallTracker::describeInFlight() const {
  std::string out;
  std::lock_guard lock(mutex_);
  for (const auto& [id, call] : calls_) {
    out +=
        (out.empty() ? "" : ", ") + call.slot + (call.object.empty() ? "" : " of " + call.object);
  }
  return out;
}

void CallTracker::end(uint64_t id) {
  std::filesystem::path journal;
  std::string uid;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    if (!it->second.observes_only) uid = it->second.object_uid;  // it left no journal
    journal = journal_;
    calls_.erase(it);
  }
  if (!journal.empty() && !uid.empty()) ::unlink(journalFile(journal, uid).c_str());
}

std::vector<InFlightCall> CallTracker::overdue(std::chrono::milliseconds grace,
                                               std::chrono::steady_clock::time_point now) const {
  std::vector<InFlightCall> stuck;
  std::lock_guard lock(mutex_);
  for (const auto& [id, call] : calls_) {
    if (now > call.deadline + grace) stuck.push_back(call);
  }
  std::sort(stuck.begin(), stuck.end(),
            [](const InFlightCall& a, const InFlightCall& b) { return a.started < b.started; });
  return stuck;
}

std::vector<InFlightCall> CallTracker::markOverdueAsHung(
    std::chrono::milliseconds grace, std::chrono::steady_clock::time_point now) {
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, call] : calls_) {
      if (call.hung || now <= call.deadline + grace) continue;
      call.hung = true;
      if (journal_.empty() || call.object_uid.empty()) continue;
      // Appended under the lock that end() takes before it unlinks, and never created: a call
      // that returned meanwhile leaves no file behind.
      int fd =
          ::open(journalFile(journal_, call.object_uid).c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd < 0) continue;
      std::string line = std::string(kHungMark) + "\n";
      (void)!::write(fd, line.data(), line.size());
      ::close(fd);
    }
  }
  return overdue(grace, now);
}

}  // namespace banlieue::plugin
