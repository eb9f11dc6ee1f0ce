#include "host/runtime/events.h"

#include "host/common/fnv_hash.h"
#include "host/common/logging.h"
#include "host/common/metrics.h"
#include "host/kube/api_error.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <string_view>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr auto kSeriesWindow = minutes(10);
constexpr auto kSeriesUpdateEvery = seconds(30);
constexpr double kBurst = 25;
constexpr double kRefillPerSecond = 1.0 / 300;                       // one token per 5 minutes
constexpr const char* kClusterScopedEventNamespace = "kube-system";  // see events.h

uint64_t randomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return rng();
}

// The event's name: the object's, a dot and 16 hex digits, cut from the front to the 253
// characters a name may have. A series rebuilds it from the suffix it keeps.
std::string eventName(const std::string& object_name, uint64_t suffix) {
  std::string name = (object_name.empty() ? std::string("event") : object_name) + "." +
                     fmt::format("{:016x}", suffix);
  if (name.size() > 253) name = name.substr(name.size() - 253);
  return name;
}

// Salted per process: names whose keys share a hash cannot be worked out in advance, so no
// object's events can be made to fold into another's series or bucket on purpose.
uint64_t keyHash(std::string_view key) {
  static const uint64_t basis = [] {
    std::random_device device;
    return common::kFnv1a64OffsetBasis ^ ((uint64_t{device()} << 32) | device());
  }();
  return common::fnv1a64(key, basis);
}

Counter& dropped(const std::string& why) {
  return MetricsRegistry::global().counter("banlieue_events_dropped_total",
                                           "Events not written, by cause", {{"cause", why}});
}

}  // namespace

uint64_t EventRecorder::Pending::seriesKey() const {
  // The namespace and the name too: a series rebuilds its event's name from them.
  return keyHash(uid + "\x1f" + ns + "\x1f" + name + "\x1f" + type + "\x1f" + reason + "\x1f" +
                 action + "\x1f" + note);
}

std::string EventRecorder::Pending::objectKey() const {
  return uid.empty() ? kind + "/" + ns + "/" + name : uid;
}

EventRecorder::EventRecorder(kube::KubeClient& client, EventSource source, Clock& clock,
                             size_t queue_capacity, size_t writers)
    : client_(client), source_(std::move(source)), clock_(clock), capacity_(queue_capacity) {
  for (size_t i = 0; i < std::max<size_t>(1, writers); ++i) {
    threads_.emplace_back([this] { writer(); });
  }
}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void EventRecorder::normal(const rapidjson::Value& regarding, const std::string& reason,
                           const std::string& action, const std::string& note) {
  record(regarding, "Normal", reason, action, note);
}

void EventRecorder::warning(const rapidjson::Value& regarding, const std::string& reason,
                            const std::string& action, const std::string& note) {
  record(regarding, "Warning", reason, action, note);
}

// A bucket that has refilled is the same as none: forget it, so a long-running role does not
// keep one per object it ever reported on. Swept when the map has doubled since the last
// sweep, so the cost per event stays constant.
void EventRecorder::dropRefilledBuckets(Clock::TimePoint now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    double elapsed = std::chrono::duration<double>(now - it->second.last).count();
    bool refilled = it->second.tokens + elapsed * kRefillPerSecond >= kBurst;
    it = refilled ? buckets_.erase(it) : std::next(it);
  }
  next_bucket_sweep_ = std::max(kFirstBucketSweep, 2 * buckets_.size());
}

bool EventRecorder::allow(uint64_t object_key) {
  auto now = clock_.now();
  if (buckets_.size() >= next_bucket_sweep_) dropRefilledBuckets(now);
  auto [it, inserted] = buckets_.try_emplace(object_key, Bucket{kBurst, now});
  Bucket& b = it->second;
  double elapsed = std::chrono::duration<double>(now - b.last).count();
  b.tokens = std::min(kBurst, b.tokens + elapsed * kRefillPerSecond);
  b.last = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void EventRecorder::record(const rapidjson::Value& regarding, const char* type,
                           const std::string& reason, const std::string& action,
                           const std::string& note) {
  Pending p;
  p.type = type;
  p.reason = reason;
  p.action = action;
  // The API server refuses notes over 1 KiB; keep the start, which says what happened.
  p.note = note.size() > 1024 ? note.substr(0, 1021) + "..." : note;
  p.api_version = json::stringOr(&regarding, "apiVersion");
  p.kind = json::stringOr(&regarding, "kind");
  p.ns = json::stringOr(&regarding, "metadata.namespace");
  p.name = json::stringOr(&regarding, "metadata.name");
  p.uid = json::stringOr(&regarding, "metadata.uid");
  p.resource_version = json::stringOr(&regarding, "metadata.resourceVersion");
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    if (queue_.size() >= capacity_) {
      dropped("queue_full").inc();
      return;
    }
    queue_.push_back(std::move(p));
  }
  cv_.notify_one();
}

void EventRecorder::flush() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && writing_ == 0; });
}

void EventRecorder::writer() {
  std::unique_lock lock(mutex_);
  // The oldest queued event of an object no other writer holds.
  auto next = [this] {
    return std::find_if(queue_.begin(), queue_.end(),
                        [this](const Pending& p) { return in_flight_.count(p.objectKey()) == 0; });
  };
  while (true) {
    cv_.wait(lock, [&] { return (stopping_ && queue_.empty()) || next() != queue_.end(); });
    if (queue_.empty() && stopping_) break;
    auto it = next();
    Pending p = std::move(*it);
    queue_.erase(it);
    const std::string object = p.objectKey();
    in_flight_.insert(object);
    ++writing_;
    lock.unlock();
    try {
      write(p);
    } catch (const std::exception& e) {
      // An event must never take a controller down.
      common::logger("events")->warn("event {} for {}/{} not written: {}", p.reason, p.kind, p.name,
                                     e.what());
    }
    lock.lock();
    --writing_;
    in_flight_.erase(object);
    cv_.notify_all();  // the object's next event, if one waits
    if (queue_.empty() && writing_ == 0) idle_cv_.notify_all();
  }
  cv_.notify_all();
  idle_cv_.notify_all();
}

void EventRecorder::write(const Pending& p) {
  const std::string event_ns = p.ns.empty() ? kClusterScopedEventNamespace : p.ns;
  auto now = clock_.now();
  const uint64_t key = p.seriesKey();

  // A repeat inside the window bumps the existing event's series instead of a new object.
  {
    std::unique_lock lock(mutex_);
    auto it = series_.find(key);
    if (it != series_.end() && now - it->second.first_seen < kSeriesWindow) {
      Series& s = it->second;
      ++s.count;
      if (now - s.last_written < kSeriesUpdateEvery) {
        s.dirty = true;  // written with the next repeat after the interval
        return;
      }
      s.last_written = now;
      s.dirty = false;
      std::string name = eventName(p.name, s.name_suffix);
      int count = s.count;
      lock.unlock();
      std::string patch = fmt::format(R"({{"series":{{"count":{},"lastObservedTime":"{}"}}}})",
                                      count, rfc3339MicroNow());
      auto patched =
          client_.patch(kube::resources::kEvent, event_ns, name, kube::PatchType::kMerge, patch);
      if (patched.ok()) return;
      if (!kube::isNotFound(patched.status())) {
        dropped("api_error").inc();
        common::logger("events")->debug("event series update for {}/{} failed: {}", p.kind, p.name,
                                        patched.status().message());
        return;
      }
      // The event expired or was deleted: start a new one below.
    }
    if (!allow(keyHash(p.objectKey()))) {
      dropped("rate_limited").inc();
      return;
    }
  }

  rapidjson::Document event(rapidjson::kObjectType);
  auto& a = event.GetAllocator();
  auto str = [&](const std::string& s) { return json::stringValue(s, a); };
  const uint64_t suffix = randomSuffix();
  std::string name = eventName(p.name, suffix);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", str(name), a);
  metadata.AddMember("namespace", str(event_ns), a);
  rapidjson::Value regarding(rapidjson::kObjectType);
  regarding.AddMember("apiVersion", str(p.api_version), a);
  regarding.AddMember("kind", str(p.kind), a);
  if (!p.ns.empty()) regarding.AddMember("namespace", str(p.ns), a);
  regarding.AddMember("name", str(p.name), a);
  if (!p.uid.empty()) regarding.AddMember("uid", str(p.uid), a);
  if (!p.resource_version.empty()) {
    regarding.AddMember("resourceVersion", str(p.resource_version), a);
  }
  event.AddMember("apiVersion", "events.k8s.io/v1", a);
  event.AddMember("kind", "Event", a);
  event.AddMember("metadata", metadata, a);
  event.AddMember("eventTime", str(rfc3339MicroNow()), a);
  event.AddMember("reportingController", str(source_.controller), a);
  event.AddMember("reportingInstance", str(source_.instance), a);
  event.AddMember("action", str(p.action), a);
  event.AddMember("reason", str(p.reason), a);
  event.AddMember("note", str(p.note), a);
  event.AddMember("type", str(p.type), a);
  event.AddMember("regarding", regarding, a);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  event.Accept(writer);

  auto created = client_.create(kube::resources::kEvent, event_ns, buffer.GetString());
  if (!created.ok()) {
    dropped("api_error").inc();
    common::logger("events")->debug("event {} for {}/{} not written: {}", p.reason, p.kind, p.name,
                                    created.status().message());
    return;
  }
  std::lock_guard lock(mutex_);
  series_[key] = Series{suffix, 1, now, now, false};
  // Forget series that have left the window so the map stays small. Swept when the map has
  // doubled since the last sweep, as the buckets are: a sweep on every new series made N
  // objects' first events cost O(N^2) (10,000 VMs each with its Ready Event in the window).
  if (series_.size() >= next_series_sweep_) {
    for (auto it = series_.begin(); it != series_.end();) {
      it = now - it->second.first_seen >= kSeriesWindow ? series_.erase(it) : std::next(it);
    }
    next_series_sweep_ = std::max(kFirstSeriesSweep, 2 * series_.size());
  }
}

}  // namespace banlieue::runtime
