#include "tests/support/fake_kube_client.h"

#include <banlieue/sdk/json.h>

#include <utility>

namespace banlieue::testing {
namespace {

// Counts a request from its start to its answer (FakeKubeClient::inFlight()).
class InFlight {
 public:
  explicit InFlight(std::atomic<int>& count) : count_(count) { ++count_; }
  ~InFlight() { --count_; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int>& count_;
};

namespace json = sdk::json;

Status notFound(const kube::ResourceType& type, const std::string& ns, const std::string& name) {
  return error(Code::kNotFound, "NotFound", type.plural + " " + ns + "/" + name + ": not found");
}

}  // namespace

int FakeKubeClient::inFlight() const {
  return in_flight_.load();
}

void FakeKubeClient::failNext(Injector injector) {
  std::lock_guard lock(inject_mutex_);
  fail_next_ = std::move(injector);
}

Status FakeKubeClient::injected(const std::string& verb, const std::string& plural) {
  Injector injector;
  {
    std::lock_guard lock(inject_mutex_);
    injector = fail_next_;
  }
  // Called on a copy, outside the lock: an injector may replace or clear itself.
  return injector ? injector(verb, plural) : Status::ok();
}

int FakeKubeClient::writes() const {
  std::lock_guard lock(mutex_);
  return writes_;
}

StatusOr<rapidjson::Document> FakeKubeClient::store(const Key& key, rapidjson::Document object) {
  auto& a = object.GetAllocator();
  if (!object.HasMember("metadata"))
    object.AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), a);
  auto& meta = object["metadata"];
  std::string rv = std::to_string(++version_);
  if (meta.HasMember("resourceVersion")) {
    meta["resourceVersion"].SetString(rv.c_str(), static_cast<rapidjson::SizeType>(rv.size()), a);
  } else {
    meta.AddMember("resourceVersion", json::stringValue(rv, a), a);
  }
  if (!meta.HasMember("uid")) meta.AddMember("uid", json::stringValue("uid-" + rv, a), a);
  objects_[key] = json::serialize(object);
  ++writes_;
  return object;
}

StatusOr<rapidjson::Document> FakeKubeClient::get(const kube::ResourceType& type,
                                                  const std::string& ns, const std::string& name,
                                                  const std::string&) {
  InFlight in_flight(in_flight_);
  if (auto st = injected("get", type.plural); !st.isOk()) return st;
  std::lock_guard lock(mutex_);
  auto it = objects_.find({type.plural, ns, name});
  if (it == objects_.end()) return notFound(type, ns, name);
  return json::parse(it->second, "stored object");
}

StatusOr<rapidjson::Document> FakeKubeClient::list(const kube::ResourceType& type,
                                                   const std::string& ns,
                                                   const kube::ListOptions&) {
  InFlight in_flight(in_flight_);
  if (auto st = injected("list", type.plural); !st.isOk()) return st;
  std::lock_guard lock(mutex_);
  std::string body =
      R"({"metadata":{"resourceVersion":")" + std::to_string(version_) + R"("},"items":[)";
  bool first = true;
  for (const auto& [key, text] : objects_) {
    if (std::get<0>(key) != type.plural || (!ns.empty() && std::get<1>(key) != ns)) continue;
    body += (first ? "" : ",") + text;
    first = false;
  }
  return json::parse(body + "]}", "list");
}

StatusOr<rapidjson::Document> FakeKubeClient::create(const kube::ResourceType& type,
                                                     const std::string& ns,
                                                     const std::string& object_json) {
  InFlight in_flight(in_flight_);
  if (auto st = injected("create", type.plural); !st.isOk()) return st;
  auto object = json::parse(object_json, "object");
  std::string name = json::stringOr(&object, "metadata.name");
  std::lock_guard lock(mutex_);
  Key key{type.plural, ns, name};
  if (objects_.count(key) != 0) {
    return error(Code::kAlreadyExists, "AlreadyExists",
                 type.plural + " " + ns + "/" + name + " already exists");
  }
  return store(key, std::move(object));
}

StatusOr<rapidjson::Document> FakeKubeClient::update(const kube::ResourceType& type,
                                                     const std::string& ns, const std::string& name,
                                                     const std::string& object_json,
                                                     const std::string&) {
  InFlight in_flight(in_flight_);
  if (auto st = injected("update", type.plural); !st.isOk()) return st;
  auto object = json::parse(object_json, "object");
  std::lock_guard lock(mutex_);
  Key key{type.plural, ns, name};
  auto it = objects_.find(key);
  if (it == objects_.end()) return notFound(type, ns, name);
  auto current = json::parse(it->second, "stored");
  std::string expected = json::stringOr(&object, "metadata.resourceVersion");
  if (!expected.empty() && expected != json::stringOr(&current, "metadata.resourceVersion")) {
    return error(Code::kAborted, "Conflict",
                 type.plural + " " + ns + "/" + name +
                     ": the object has been modified; please apply your changes "
                     "to the latest version and try again");
  }
  return store(key, std::move(object));
}

namespace {
// RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces.
void mergePatch(rapidjson::Value& target, const rapidjson::Value& patch,
                rapidjson::Document::AllocatorType& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (const auto& m : patch.GetObject()) {
    auto it = target.FindMember(m.name);
    if (m.value.IsNull()) {
      if (it != target.MemberEnd()) target.RemoveMember(it);
    } else if (it != target.MemberEnd()) {
      mergePatch(it->value, m.value, a);
    } else {
      rapidjson::Value name(m.name, a);
      rapidjson::Value value(rapidjson::kNullType);
      mergePatch(value, m.value, a);
      target.AddMember(name, value, a);
    }
  }
}
}  // namespace

StatusOr<rapidjson::Document> FakeKubeClient::patch(const kube::ResourceType& type,
                                                    const std::string& ns, const std::string& name,
                                                    kube::PatchType patch_type,
                                                    const std::string& patch_json,
                                                    const std::string&) {
  InFlight in_flight(in_flight_);
  if (auto st = injected("patch", type.plural); !st.isOk()) return st;
  if (patch_type != kube::PatchType::kMerge) {
    return error(Code::kUnimplemented, "Unimplemented",
                 "the fake client only supports merge patches");
  }
  auto patch = json::parse(patch_json, "patch");
  std::lock_guard lock(mutex_);
  Key key{type.plural, ns, name};
  auto it = objects_.find(key);
  if (it == objects_.end()) return notFound(type, ns, name);
  auto current = json::parse(it->second, "stored");
  // A resourceVersion in a merge patch is a precondition, as on the real API server.
  std::string expected = json::stringOr(&patch, "metadata.resourceVersion");
  if (!expected.empty() && expected != json::stringOr(&current, "metadata.resourceVersion")) {
    return error(Code::kAborted, "Conflict",
                 type.plural + " " + ns + "/" + name + ": the object has been modified");
  }
  mergePatch(current, patch, current.GetAllocator());
  return store(key, std::move(current));
}

StatusOr<rapidjson::Document> FakeKubeClient::apply(const kube::ResourceType& type,
                                                    const std::string& ns, const std::string& name,
                                                    const std::string& object_json,
                                                    const kube::ApplyOptions&) {
  InFlight in_flight(in_flight_);
  if (auto st = injected("apply", type.plural); !st.isOk()) return st;
  std::lock_guard lock(mutex_);
  return store({type.plural, ns, name}, json::parse(object_json, "object"));
}

Status FakeKubeClient::remove(const kube::ResourceType& type, const std::string& ns,
                              const std::string& name, const kube::DeleteOptions&) {
  InFlight in_flight(in_flight_);
  if (auto st = injected("delete", type.plural); !st.isOk()) return st;
  std::lock_guard lock(mutex_);
  if (objects_.erase({type.plural, ns, name}) == 0) return notFound(type, ns, name);
  ++writes_;
  return Status::ok();
}

Status FakeKubeClient::watch(const kube::ResourceType& type, const std::string&,
                             const kube::WatchOptions&,
                             const std::function<bool(kube::WatchEvent&)>&,
                             const std::atomic<bool>*) {
  InFlight in_flight(in_flight_);
  return error(Code::kUnimplemented, "Unimplemented",
               "the fake client does not watch " + type.plural);
}

}  // namespace banlieue::testing
