// A reflector and informer cache for one resource type, with client-go's behaviour:
//  - list (paged, 500 per page), then watch from the list's resourceVersion, with bookmarks;
//  - a watch that ends (server timeout) resumes from the last seen resourceVersion;
//  - 410 Gone (history compacted) relists and reports objects that vanished as deletions;
//  - other failures back off exponentially with jitter (0.8 s doubling to 30 s);
//  - the cache keeps each object as its compact JSON text, packed against a sibling as
//    deflate dictionary (packed_text.h, docs/adr/0055), indexed by key ("ns/name"),
//    namespace, owner UID and any indexer added before run(); get(), list() and byIndex()
//    parse the text into an immutable snapshot (shared_ptr<const Document>) owned by the
//    caller. A parsed document takes 2-3 times its text, so parsing on read is what keeps a
//    cache of 10,000 objects small (docs/adr/0051); the keys alone (keys(), keysByIndex(),
//    countByIndex()) cost no parse;
//  - unless told otherwise, snapshots leave out metadata.managedFields and kubectl's
//    last-applied-configuration annotation (see InformerOptions::keep_write_bookkeeping);
//  - handlers see add / update(old, new) / delete; has_synced() turns true after the first
//    complete list.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"
#include "host/runtime/clock.h"
#include "host/runtime/packed_text.h"

#include <rapidjson/document.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

namespace banlieue::runtime {

using Object = std::shared_ptr<const rapidjson::Document>;

// "ns/name" for namespaced objects, "name" for cluster-scoped ones.
std::string objectKey(const rapidjson::Value& object);
// Their keys, in order (what a mapped watch returns for the objects an index found).
std::vector<std::string> objectKeys(const std::vector<Object>& objects);

struct EventHandler {
  std::function<void(const Object&)> on_add;
  std::function<void(const Object& old_object, const Object& new_object)> on_update;
  std::function<void(const Object&)> on_delete;
};

using IndexFunc = std::function<std::vector<std::string>(const rapidjson::Value&)>;

struct InformerOptions {
  std::string ns;  // empty = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  int watch_timeout_seconds = 240;
  // metadata.managedFields and the kubectl.kubernetes.io/last-applied-configuration annotation
  // are each writer's record of what it wrote: often larger than the spec, read by no
  // reconciler, and the bulk of a cached object's memory. Dropped unless this is set. Writing a
  // cached copy back whole (an update) would then delete the annotation, so a caller that does
  // so, or that reads either field, sets this.
  bool keep_write_bookkeeping = false;
};

struct InformerStats {
  uint64_t lists = 0;    // complete lists (the first, then every relist)
  uint64_t watches = 0;  // watch requests made
  uint64_t events = 0;   // watch events applied to the cache
};

class Informer {
 public:
  Informer(kube::KubeClient& client, kube::ResourceType type, InformerOptions options,
           Clock& clock = SteadyClock::instance());

  // Before run(): handlers and indexers. "namespace" and "owner" indexes always exist.
  void addHandler(EventHandler handler);
  void addIndexer(const std::string& name, IndexFunc index);

  // Runs until `stop` becomes true (checked between requests; a watch request ends at its
  // server-side timeout at the latest).
  void run(const std::atomic<bool>& stop);

  bool hasSynced() const { return synced_.load(); }
  // Each returned object is parsed for the caller: list() and byIndex() cost one parse per
  // object, so a caller that needs only keys or a count asks for those.
  Object get(const std::string& key) const;
  std::vector<Object> list() const;
  std::vector<Object> byIndex(const std::string& index, const std::string& value) const;
  std::vector<std::string> keys() const;
  std::vector<std::string> keysByIndex(const std::string& index, const std::string& value) const;
  size_t countByIndex(const std::string& index, const std::string& value) const;
  size_t size() const;
  // The keys and packed texts held, in bytes: what the cache's objects cost before the maps'
  // and indexes' own overhead.
  size_t bytes() const;
  std::string lastResourceVersion() const;
  InformerStats stats() const;

 private:
  // What the cache stores of a received object: its key and its packed text, the bookkeeping
  // dropped. A list keeps only these until it is complete, so a relist of N objects never
  // holds N parsed documents.
  struct Received {
    std::string key;
    std::string resource_version;
    std::string text;  // packed by packer_
  };
  Received receive(rapidjson::Value& object);
  // A stored (packed) text, unpacked and parsed.
  Object snapshot(std::string_view packed) const;
  Status listAndReplace();
  Status watchOnce(const std::atomic<bool>& stop);
  void upsert(Received received);
  void erase(const std::string& key);
  void indexLocked(const std::string& key, const rapidjson::Value& object, bool add);
  void backoff(const std::atomic<bool>& stop, int& failures);

  kube::KubeClient& client_;
  kube::ResourceType type_;
  InformerOptions options_;
  Clock& clock_;
  std::vector<EventHandler> handlers_;
  std::map<std::string, IndexFunc> indexers_;

  mutable std::shared_mutex mutex_;
  TextPacker packer_;
  std::map<std::string, std::string> items_;  // key -> compact JSON text, packed by packer_
  std::map<std::string, std::map<std::string, std::set<std::string>>>
      indexes_;              // index -> value -> keys
  size_t stored_bytes_ = 0;  // bytes(): kept up to date under mutex_
  std::string resource_version_;
  std::atomic<bool> synced_{false};
  InformerStats stats_;
};

}  // namespace banlieue::runtime
