// The plugin's side of watch_changes (SINCE 1.4): a bounded log of the machines that changed at
// the backend, written by whatever tells the plugin (a libvirt event callback, an inotify
// reader, a WaitForUpdatesEx or a listing the call itself runs) and read through cursors by the
// host's watch_changes calls. Every rule of the slot's contract that does not depend on the
// backend lives here: the first call answers at once; a later one waits for news or its
// deadline; a cursor this log did not hand out, or one older than what it still holds, is
// answered with "all". A reply lost on its way to the host loses nothing: the host asks again
// with its old cursor, and the log still has what came after it.
#pragma once

#include <banlieue/sdk/host.h>
#include <banlieue/sdk/json.h>
#include <banlieue/sdk/payloads.h>
#include <banlieue/sdk/provider.h>
#include <banlieue/sdk/status.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace banlieue::sdk {

class ChangeLog {
 public:
  // What one watchChanges call may spend at the backend when it polls: up to `budget`, then
  // return, having recorded what it saw.
  using Poll = std::function<void(std::chrono::milliseconds budget)>;

  // `capacity` entries are kept; a cursor that fell behind them is answered with "all".
  explicit ChangeLog(size_t capacity = 4096)
      : capacity_(std::max<size_t>(capacity, 1)), epoch_(std::random_device{}()) {}

  // The machine whose spec.providerID is `provider_id` changed. Any thread.
  void record(std::string provider_id) {
    {
      std::lock_guard lock(mu_);
      entries_.emplace_back(++last_, std::move(provider_id));
      while (entries_.size() > capacity_) {
        dropped_ = entries_.front().first;
        entries_.pop_front();
      }
    }
    news_.notify_all();
  }

  // Changes may have been missed (a lost connection, events dropped): the next answer to
  // every cursor from before now is "all". Any thread.
  void recordAll() {
    {
      std::lock_guard lock(mu_);
      all_at_ = ++last_;
    }
    news_.notify_all();
  }

  // Waits up to `timeout` for the next record: how a Poll that also has events pushed to the
  // log (a callback's record) spends its budget. Any thread.
  void waitForNews(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    const uint64_t seen = last_;
    news_.wait_for(lock, timeout, [&] { return last_ != seen; });
  }

  // Answers one watchChanges call into `reply`. With `poll`, the wait is spent in it (a backend
  // long poll that records what it sees) instead of on the log alone. Returns once there is
  // news past the cursor, or `margin` before the call's deadline, or when it is cancelled.
  Status answer(const Call& call, const WatchRequest& request, Reply& reply, const Poll& poll = {},
                std::chrono::milliseconds margin = std::chrono::seconds(2)) {
    std::unique_lock lock(mu_);
    if (request.cursor.empty()) return write(reply, lock, last_, false);
    auto since = parse(request.cursor);
    if (!since || *since > last_) return write(reply, lock, last_, true);
    auto news = [&] { return last_ > *since; };
    const auto deadline = std::chrono::steady_clock::now() + call.remaining() - margin;
    while (!news() && !call.cancelled()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      // Wakes at least every second to see a cancellation.
      auto step = std::min<std::chrono::milliseconds>(left, std::chrono::seconds(1));
      if (poll) {
        lock.unlock();
        poll(std::min<std::chrono::milliseconds>(left, std::chrono::seconds(30)));
        lock.lock();
      } else {
        news_.wait_for(lock, step, news);
      }
    }
    return write(reply, lock, *since, false);
  }

 private:
  // "all" when asked, or when changes after `since` were dropped from the log or declared
  // lost; otherwise every providerID recorded after `since`, once.
  Status write(Reply& reply, std::unique_lock<std::mutex>& /*held*/, uint64_t since,
               bool all) const {
    all = all || all_at_ > since || dropped_ > since;
    auto& a = reply.allocator();
    std::set<std::string_view> changed;
    if (!all) {
      for (const auto& [sequence, provider_id] : entries_) {
        if (sequence > since) changed.insert(provider_id);
      }
    }
    rapidjson::Value list(rapidjson::kArrayType);
    for (auto id : changed) list.PushBack(json::stringValue(id, a), a);
    reply.body().AddMember("cursor", json::stringValue(cursor(last_), a), a);
    reply.body().AddMember("changed", list, a);
    reply.body().AddMember("all", all, a);
    return Status::ok();
  }

  std::string cursor(uint64_t sequence) const {
    return std::to_string(epoch_) + ":" + std::to_string(sequence);
  }

  // The sequence of a cursor this log handed out; nothing for any other.
  std::optional<uint64_t> parse(std::string_view text) const {
    auto colon = text.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    uint64_t epoch = 0;
    uint64_t sequence = 0;
    auto e = std::from_chars(text.data(), text.data() + colon, epoch);
    auto s = std::from_chars(text.data() + colon + 1, text.data() + text.size(), sequence);
    if (e.ec != std::errc() || e.ptr != text.data() + colon || s.ec != std::errc() ||
        s.ptr != text.data() + text.size() || epoch != epoch_) {
      return std::nullopt;
    }
    return sequence;
  }

  const size_t capacity_;
  const uint64_t epoch_;
  std::mutex mu_;
  std::condition_variable news_;
  uint64_t last_ = 0;     // the sequence of the last record
  uint64_t all_at_ = 0;   // the sequence of the last recordAll
  uint64_t dropped_ = 0;  // the sequence of the last entry dropped for room
  std::deque<std::pair<uint64_t, std::string>> entries_;
};

}  // namespace banlieue::sdk
