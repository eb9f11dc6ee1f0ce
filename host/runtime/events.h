// Kubernetes Events (events.k8s.io/v1) as controllers emit them, with the guarantees a
// reconcile needs:
//  - recording never blocks and never fails the caller: events go through a bounded queue to
//    a background writer, and a full queue or an API error only drops the event (counted in
//    banlieue_events_dropped_total);
//  - repeats of the same event (same object, type, reason and note) within ten minutes do not
//    create new objects: the first one gets `series` {count, lastObservedTime}, updated at
//    most every 30 s, as client-go's events library does;
//  - a per-object token bucket (burst 25, one token per 5 minutes) stops a hot loop from
//    flooding etcd, like client-go's spam filter.
// Cluster-scoped objects' events (VMImage, ProviderClass) go to "kube-system": the one namespace
// every apiserver with events.k8s.io/v1 accepts for them (1.20 refuses "default" with
// "involvedObject.namespace ... does not match event.namespace"; later versions accept both).
// `kubectl describe` of a cluster-scoped object searches every namespace, so it finds them.
#pragma once

#include "host/kube/client.h"
#include "host/runtime/clock.h"

#include <rapidjson/document.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace banlieue::runtime {

struct EventSource {
  std::string controller;  // reportingController, e.g. banlieue.io/controller
  std::string instance;    // reportingInstance, e.g. the pod name
};

class EventRecorder {
 public:
  // `writers` threads post events side by side: one writer, one POST at a time, fell behind
  // 16 reconcile workers (at N = 1,000 half of the VMs' Ready Events were written after the
  // VMs had converged, and a longer backlog overflows the queue: issue #23).
  EventRecorder(kube::KubeClient& client, EventSource source,
                Clock& clock = SteadyClock::instance(), size_t queue_capacity = 1000,
                size_t writers = 4);
  ~EventRecorder();  // writes what is queued (bounded by a few seconds), then stops
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // `regarding` is the object the event is about (apiVersion, kind, metadata). `action` says
  // what the controller did or failed to do (e.g. "Schedule"), `reason` why (CamelCase).
  void normal(const rapidjson::Value& regarding, const std::string& reason,
              const std::string& action, const std::string& note);
  void warning(const rapidjson::Value& regarding, const std::string& reason,
               const std::string& action, const std::string& note);

  // How many objects' event rates are tracked; an object's entry goes once its bucket has
  // refilled, so this follows the objects with recent events, not every object ever seen.
  // Read it after flush() (tests).
  size_t trackedObjects() const { return buckets_.size(); }

  // Blocks until the queue is empty (tests).
  void flush();

 private:
  struct Pending {
    std::string type, reason, action, note;
    std::string api_version, kind, ns, name, uid, resource_version;
    uint64_t seriesKey() const;
    std::string objectKey() const;
  };
  // Kept ten minutes per object that had an event: at 10,000 VMs, one Ready Event each, the
  // series and the buckets are kept by 64-bit hashes of their keys (two keys sharing a hash
  // would share a series or a bucket; at 10,000 keys the odds are about 1 in 10^11), and a
  // series keeps only the random part of its event's name, which the object's name and the
  // namespace (both in the key) complete.
  struct Series {
    uint64_t name_suffix = 0;
    int count = 1;
    Clock::TimePoint first_seen, last_written;
    bool dirty = false;
  };
  struct Bucket {
    double tokens;
    Clock::TimePoint last;
  };

  void record(const rapidjson::Value& regarding, const char* type, const std::string& reason,
              const std::string& action, const std::string& note);
  bool allow(uint64_t object_key);
  void dropRefilledBuckets(Clock::TimePoint now);
  static constexpr size_t kFirstBucketSweep = 1024;
  void writer();
  void write(const Pending& event);

  kube::KubeClient& client_;
  EventSource source_;
  Clock& clock_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Pending> queue_;
  size_t writing_ = 0;  // writers between taking an event and finishing its write
  // Objects whose event a writer holds: one object's events are written one at a time and in
  // order (a repeat must find the series its first occurrence created).
  std::set<std::string> in_flight_;
  bool stopping_ = false;
  std::unordered_map<uint64_t, Series> series_;  // by seriesKey
  static constexpr size_t kFirstSeriesSweep = 1024;
  size_t next_series_sweep_ = kFirstSeriesSweep;  // under mutex_
  std::unordered_map<uint64_t, Bucket> buckets_;  // by a hash of the object key; under mutex_
  size_t next_bucket_sweep_ = kFirstBucketSweep;
  std::vector<std::thread> threads_;
};

}  // namespace banlieue::runtime
