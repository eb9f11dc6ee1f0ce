#include "host/runtime/informer.h"

#include "host/common/logging.h"
#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <random>
#include <thread>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;

// A parsed snapshot and the memory pool it lives in. RapidJSON's default pool starts with a
// 64 KiB chunk; a chunk sized to the text (a parsed document takes 2-3 times its text) makes
// one allocation of most objects.
struct Snapshot {
  explicit Snapshot(size_t text_bytes) : pool(std::max<size_t>(1024, 3 * text_bytes)) {}
  rapidjson::MemoryPoolAllocator<> pool;
  rapidjson::Document document{&pool};
};

Object parseSnapshot(std::string_view text) {
  auto owner = std::make_shared<Snapshot>(text.size());
  // The text was written by this process from a parsed document: it parses.
  owner->document.Parse(text.data(), text.size());
  return Object(owner, &owner->document);  // shares ownership of the whole snapshot
}

std::string compactText(const rapidjson::Value& object) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  object.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};  // exact size: the buffer's slack stays behind
}

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

Informer::Received Informer::receive(rapidjson::Value& object) {
  if (!options_.keep_write_bookkeeping) dropWriteBookkeeping(object);
  return {.key = objectKey(object),
          .resource_version = json::stringOr(&object, "metadata.resourceVersion"),
          .text = packer_.pack(compactText(object))};
}

Object Informer::snapshot(std::string_view packed) const {
  return parseSnapshot(packer_.unpack(packed));
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
  std::string text;
  {
    std::shared_lock lock(mutex_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    text = it->second;
  }
  return snapshot(text);  // outside the lock: writers do not wait for readers' parses
}

std::vector<Object> Informer::list() const {
  std::vector<std::string> texts;
  {
    std::shared_lock lock(mutex_);
    texts.reserve(items_.size());
    for (const auto& [key, text] : items_) texts.push_back(text);
  }
  std::vector<Object> out;
  out.reserve(texts.size());
  for (const auto& text : texts) out.push_back(snapshot(text));
  return out;
}

std::vector<Object> Informer::byIndex(const std::string& index, const std::string& value) const {
  std::vector<std::string> texts;
  {
    std::shared_lock lock(mutex_);
    auto idx = indexes_.find(index);
    if (idx == indexes_.end()) return {};
    auto keys = idx->second.find(value);
    if (keys == idx->second.end()) return {};
    texts.reserve(keys->second.size());
    for (const auto& key : keys->second) {
      if (auto it = items_.find(key); it != items_.end()) texts.push_back(it->second);
    }
  }
  std::vector<Object> out;
  out.reserve(texts.size());
  for (const auto& text : texts) out.push_back(snapshot(text));
  return out;
}

std::vector<std::string> Informer::keys() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [key, text] : items_) out.push_back(key);
  return out;
}

std::vector<std::string> Informer::keysByIndex(const std::string& index,
                                               const std::string& value) const {
  std::shared_lock lock(mutex_);
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return {};
  auto keys = idx->second.find(value);
  if (keys == idx->second.end()) return {};
  return {keys->second.begin(), keys->second.end()};
}

size_t Informer::countByIndex(const std::string& index, const std::string& value) const {
  std::shared_lock lock(mutex_);
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return 0;
  auto keys = idx->second.find(value);
  return keys == idx->second.end() ? 0 : keys->second.size();
}

size_t Informer::bytes() const {
  std::shared_lock lock(mutex_);
  return stored_bytes_;
}

size_t Informer::size() const {
  std::shared_lock lock(mutex_);
  return items_.size();
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

void Informer::upsert(Received received) {
  Object old;
  Object current;
  {
    std::unique_lock lock(mutex_);
    auto it = items_.find(received.key);
    if (it != items_.end()) {
      old = snapshot(it->second);
      indexLocked(received.key, *old, false);
      stored_bytes_ -= it->second.size();
      it->second = std::move(received.text);
      stored_bytes_ += it->second.size();
    } else {
      it = items_.emplace(received.key, std::move(received.text)).first;
      stored_bytes_ += it->first.size() + it->second.size();
    }
    // What the indexers and the handlers see is what the cache holds, parsed back.
    current = snapshot(it->second);
    indexLocked(received.key, *current, true);
  }
  for (const auto& h : handlers_) {
    if (old && h.on_update) h.on_update(old, current);
    if (!old && h.on_add) h.on_add(current);
  }
}

void Informer::erase(const std::string& key) {
  Object old;
  {
    std::unique_lock lock(mutex_);
    auto it = items_.find(key);
    if (it == items_.end()) return;
    old = snapshot(it->second);
    indexLocked(key, *old, false);
    stored_bytes_ -= it->first.size() + it->second.size();
    items_.erase(it);
  }
  for (const auto& h : handlers_) {
    if (h.on_delete) h.on_delete(old);
  }
}

Status Informer::listAndReplace() {
  std::map<std::string, Received> fresh;
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
        auto received = receive(item);
        std::string key = received.key;
        fresh.insert_or_assign(std::move(key), std::move(received));
      }
    }
    continue_token = json::stringOr(&*page, "metadata.continue");
    version = json::stringOr(&*page, "metadata.resourceVersion");
  } while (!continue_token.empty());

  std::vector<std::string> vanished;
  {
    std::shared_lock lock(mutex_);
    for (const auto& [key, text] : items_) {
      if (fresh.count(key) == 0) vanished.push_back(key);
    }
  }
  for (const auto& key : vanished) erase(key);
  for (auto& [key, received] : fresh) {
    // Unchanged objects (the same resourceVersion) raise no update. A relist is rare: the
    // parse of each cached object it costs is not worth a resourceVersion kept per object.
    std::string cached_text;
    {
      std::shared_lock lock(mutex_);
      if (auto it = items_.find(key); it != items_.end()) cached_text = it->second;
    }
    if (!cached_text.empty()) {
      auto cached = snapshot(cached_text);
      if (json::stringOr(cached.get(), "metadata.resourceVersion") == received.resource_version)
        continue;
    }
    upsert(std::move(received));
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
          upsert(receive(event.object));
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
