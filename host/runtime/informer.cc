#include "host/runtime/informer.h"

#include "host/common/logging.h"
#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>

#include <random>
#include <thread>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;

// A cached object and the memory pool it lives in. RapidJSON's default pool starts with a
// 64 KiB chunk, which made every small cached object cost ~6 KiB of RSS; small chunks bring a
// ConfigMap down to its real size (bench/informer_bench.cc).
struct Snapshot {
  static constexpr size_t kChunkBytes = 1024;
  rapidjson::MemoryPoolAllocator<> pool{kChunkBytes};
  rapidjson::Document document{&pool};
};

constexpr char kLastAppliedAnnotation[] = "kubectl.kubernetes.io/last-applied-configuration";

// Removes the writers' bookkeeping (InformerOptions::keep_write_bookkeeping) in place, before
// the copy: what is never copied never takes pool memory.
void dropWriteBookkeeping(rapidjson::Value& object) {
  if (!object.IsObject()) return;
  auto metadata = object.FindMember("metadata");
  if (metadata == object.MemberEnd() || !metadata->value.IsObject()) return;
  metadata->value.RemoveMember("managedFields");
  auto annotations = metadata->value.FindMember("annotations");
  if (annotations != metadata->value.MemberEnd() && annotations->value.IsObject()) {
    annotations->value.RemoveMember(kLastAppliedAnnotation);
  }
}

std::vector<std::string> namespaceIndex(const rapidjson::Value& object) {
  return {json::stringOr(&object, "metadata.namespace")};
}

std::vector<std::string> ownerIndex(const rapidjson::Value& object) {
  std::vector<std::string> owners;
  if (const auto* refs = json::find(&object, "metadata.ownerReferences"); refs && refs->IsArray()) {
    for (const auto& ref : refs->GetArray()) owners.push_back(json::stringOr(&ref, "uid"));
  }
  return owners;
}

}  // namespace

Object Informer::snapshot(rapidjson::Value& object) const {
  if (!options_.keep_write_bookkeeping) dropWriteBookkeeping(object);
  auto owner = std::make_shared<Snapshot>();
  owner->document.CopyFrom(object, owner->pool);
  return Object(owner, &owner->document);  // shares ownership of the whole snapshot
}

std::string objectKey(const rapidjson::Value& object) {
  std::string ns = json::stringOr(&object, "metadata.namespace");
  std::string name = json::stringOr(&object, "metadata.name");
  return ns.empty() ? name : ns + "/" + name;
}

std::vector<std::string> objectKeys(const std::vector<Object>& objects) {
  std::vector<std::string> keys;
  keys.reserve(objects.size());
  for (const auto& object : objects) keys.push_back(objectKey(*object));
  return keys;
}

Informer::Informer(kube::KubeClient& client, kube::ResourceType type, InformerOptions options,
                   Clock& clock)
    : client_(client), type_(std::move(type)), options_(std::move(options)), clock_(clock) {
  indexers_["namespace"] = namespaceIndex;
  indexers_["owner"] = ownerIndex;
}

void Informer::addHandler(EventHandler handler) {
  handlers_.push_back(std::move(handler));
}
void Informer::addIndexer(const std::string& name, IndexFunc index) {
  indexers_[name] = std::move(index);
}

Object Informer::get(const std::string& key) const {
  std::shared_lock lock(mutex_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<Object> Informer::list() const {
  std::shared_lock lock(mutex_);
  std::vector<Object> out;
  out.reserve(items_.size());
  for (const auto& [key, object] : items_) out.push_back(object);
  return out;
}

std::vector<Object> Informer::byIndex(const std::string& index, const std::string& value) const {
  std::shared_lock lock(mutex_);
  std::vector<Object> out;
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  auto keys = idx->second.find(value);
  if (keys == idx->second.end()) return out;
  for (const auto& key : keys->second) {
    if (auto it = items_.find(key); it != items_.end()) out.push_back(it->second);
  }
  return out;
}

std::string Informer::lastResourceVersion() const {
  std::shared_lock lock(mutex_);
  return resource_version_;
}

InformerStats Informer::stats() const {
  std::shared_lock lock(mutex_);
  return stats_;
}

void Informer::indexLocked(const std::string& key, const rapidjson::Value& object, bool add) {
  for (const auto& [name, index] : indexers_) {
    for (const auto& value : index(object)) {
      auto& keys = indexes_[name][value];
      if (add) {
        keys.insert(key);
      } else {
        keys.erase(key);
        if (keys.empty()) indexes_[name].erase(value);
      }
    }
  }
}

void Informer::upsert(const Object& object) {
  std::string key = objectKey(*object);
  Object old;
  {
    std::unique_lock lock(mutex_);
    auto it = items_.find(key);
    if (it != items_.end()) {
      old = it->second;
      indexLocked(key, *old, false);
    }
    items_[key] = object;
    indexLocked(key, *object, true);
  }
  for (const auto& h : handlers_) {
    if (old && h.on_update) h.on_update(old, object);
    if (!old && h.on_add) h.on_add(object);
  }
}

void Informer::erase(const std::string& key) {
  Object old;
  {
    std::unique_lock lock(mutex_);
    auto it = items_.find(key);
    if (it == items_.end()) return;
    old = it->second;
    indexLocked(key, *old, false);
    items_.erase(it);
  }
  for (const auto& h : handlers_) {
    if (h.on_delete) h.on_delete(old);
  }
}

Status Informer::listAndReplace() {
  std::map<std::string, Object> fresh;
  std::string continue_token;
  std::string version;
  do {
    auto page = client_.list(type_, options_.ns,
                             {.label_selector = options_.label_selector,
                              .field_selector = options_.field_selector,
                              .limit = options_.page_size,
                              .continue_token = continue_token});
    if (!page.ok()) return page.status();
    if (const auto* items = json::member(&*page, "items"); items && items->IsArray()) {
      std::string api_version = type_.apiVersion();
      std::string kind = json::stringOr(&*page, "kind");
      if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0)
        kind.resize(kind.size() - 4);
      for (auto& item : page.value()["items"].GetArray()) {
        // List items carry no apiVersion/kind; add them so cached objects are complete.
        auto& a = page->GetAllocator();
        if (!item.HasMember("apiVersion"))
          item.AddMember("apiVersion", json::stringValue(api_version, a), a);
        if (!item.HasMember("kind") && !kind.empty())
          item.AddMember("kind", json::stringValue(kind, a), a);
        auto object = snapshot(item);
        fresh[objectKey(*object)] = object;
      }
    }
    continue_token = json::stringOr(&*page, "metadata.continue");
    version = json::stringOr(&*page, "metadata.resourceVersion");
  } while (!continue_token.empty());

  std::vector<std::string> vanished;
  {
    std::shared_lock lock(mutex_);
    for (const auto& [key, object] : items_) {
      if (fresh.count(key) == 0) vanished.push_back(key);
    }
  }
  for (const auto& key : vanished) erase(key);
  for (auto& [key, object] : fresh) {
    Object current = get(key);
    // Unchanged objects (same resourceVersion) raise no update.
    if (current && json::stringOr(current.get(), "metadata.resourceVersion") ==
                       json::stringOr(object.get(), "metadata.resourceVersion")) {
      continue;
    }
    upsert(object);
  }
  std::unique_lock lock(mutex_);
  resource_version_ = version;
  ++stats_.lists;
  return Status::ok();
}

Status Informer::watchOnce(const std::atomic<bool>& stop) {
  {
    std::unique_lock lock(mutex_);
    ++stats_.watches;
  }
  return client_.watch(
      type_, options_.ns,
      {.resource_version = lastResourceVersion(),
       .label_selector = options_.label_selector,
       .field_selector = options_.field_selector,
       .timeout_seconds = options_.watch_timeout_seconds},
      [&](kube::WatchEvent& event) {
        std::string version = json::stringOr(&event.object, "metadata.resourceVersion");
        if (event.type == "ADDED" || event.type == "MODIFIED") {
          upsert(snapshot(event.object));
        } else if (event.type == "DELETED") {
          erase(objectKey(event.object));
        }
        std::unique_lock lock(mutex_);
        if (!version.empty()) resource_version_ = version;
        if (event.type != "BOOKMARK") ++stats_.events;
        return !stop.load();
      },
      &stop);
}

void Informer::backoff(const std::atomic<bool>& stop, int& failures) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  double base = std::min(30.0, 0.8 * (1 << std::min(failures, 6)));
  double jittered = base * std::uniform_real_distribution<double>(1.0, 2.0)(rng);
  ++failures;
  auto until = clock_.now() + std::chrono::duration_cast<Clock::TimePoint::duration>(
                                  std::chrono::duration<double>(std::min(jittered, 30.0)));
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock lock(m);
  while (!stop.load() && clock_.now() < until) clock_.waitUntil(lock, cv, until);
  clock_.forget(cv);
}

void Informer::run(const std::atomic<bool>& stop) {
  auto log = common::logger("informer");
  int failures = 0;
  bool need_list = true;
  while (!stop.load()) {
    if (need_list) {
      auto st = listAndReplace();
      if (!st.isOk()) {
        log->warn("list {}: {}", type_.plural, st.message());
        backoff(stop, failures);
        continue;
      }
      synced_ = true;
      need_list = false;
      failures = 0;
    }
    auto st = watchOnce(stop);
    if (st.isOk()) {
      failures = 0;  // the server ended the watch; resume from the last version
      continue;
    }
    if (kube::isGone(st)) {
      log->info("watch {}: {}; relisting", type_.plural, st.message());
      need_list = true;
      continue;
    }
    log->warn("watch {}: {}", type_.plural, st.message());
    backoff(stop, failures);
  }
}

}  // namespace banlieue::runtime
