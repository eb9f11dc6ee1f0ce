#include "tests/vsphere/plugin_driver.h"

#include "tests/support/build_paths.h"

#include <banlieue/sdk/json.h>
#include <dlfcn.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace banlieue::vsphere::testing {

PluginDriver::PluginDriver() {
  handle_ = dlopen(BANLIEUE_VSPHERE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  auto init = reinterpret_cast<banlieue_provider_v1_init_fn>(
      dlsym(handle_, BANLIEUE_PROVIDER_V1_INIT_SYMBOL));
  if (init == nullptr) throw std::runtime_error("no banlieue_provider_v1_init");
  host_.clearRecords();
  client_ = host_.load(init);
}

PluginDriver::~PluginDriver() {
  destroy();  // never dlclose: plugins are never unloaded (ABI rule)
}

sdk::abi::CallOutcome PluginDriver::create(const std::string& config) {
  destroy();
  auto call = host_.call("0b6f5a8e-1d2c-4e3f-8a9b-7c6d5e4f3a2b", std::chrono::seconds(30));
  return client_.instanceCreate(call, config, &instance_);
}

void PluginDriver::destroy() {
  if (instance_ == nullptr) return;
  auto call = host_.call({}, std::chrono::seconds(10));
  client_.instanceDestroy(instance_, call);
  instance_ = nullptr;
}

sdk::abi::CallOutcome PluginDriver::introspect(const std::string& request) {
  auto call = host_.call("0b6f5a8e-1d2c-4e3f-8a9b-7c6d5e4f3a2b", std::chrono::seconds(30));
  return client_.introspect(instance_, call, request);
}

sdk::abi::CallOutcome PluginDriver::once(const std::string& slot, const std::string& kind,
                                         const std::string& uid, const std::string& request) {
  auto call = host_.call(uid, std::chrono::seconds(30));
  if (slot == "reconcile") return client_.reconcile(instance_, call, kind, request);
  if (slot == "finalize") return client_.finalize(instance_, call, kind, request);
  if (slot == "delete_image") return client_.deleteImage(instance_, call, request);
  if (slot == "snapshot") return client_.snapshot(instance_, call, request);
  if (slot == "console_open") {
    // A stream, if one came back, is closed at once: the tests read the reply.
    banlieue_console* console = nullptr;
    auto outcome = client_.consoleOpen(instance_, call, request, &console);
    client_.consoleClose(console);
    return outcome;
  }
  return client_.importImage(instance_, call, request);
}

sdk::abi::CallOutcome PluginDriver::watchChanges(const std::string& cursor,
                                                 std::chrono::milliseconds timeout) {
  auto call = host_.call("0b6f5a8e-1d2c-4e3f-8a9b-7c6d5e4f3a2b", timeout);
  rapidjson::Document request(rapidjson::kObjectType);
  request.AddMember("cursor", sdk::json::stringValue(cursor, request.GetAllocator()),
                    request.GetAllocator());
  return client_.watchChanges(instance_, call, sdk::json::serialize(request));
}

sdk::abi::CallOutcome PluginDriver::drive(const std::string& slot, const std::string& kind,
                                          const std::string& uid, const std::string& request,
                                          int polls) {
  std::string token;
  sdk::abi::CallOutcome outcome;
  for (int i = 0; i < polls; ++i) {
    std::string body = request;
    if (!token.empty()) {
      body.pop_back();  // the closing brace
      body += R"(,"operation":{"token":")" + token + R"("}})";
    }
    outcome = once(slot, kind, uid, body);
    if (outcome.code != BANLIEUE_IN_PROGRESS) return outcome;
    auto reply = sdk::json::parse(outcome.body, "reply");
    token = sdk::json::stringOr(&reply, "operation.token");
    if (outcome.reason == "Installing") return outcome;  // the test plays the installer
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return outcome;
}

namespace {

std::unique_ptr<SoapClient> clientFor(const Vcsim& vcsim) {
  Url url = Url::parse(vcsim.url());
  TlsOptions tls;
  tls.ca_bundle_pem = vcsim.caPem();
  Credentials creds;
  creds.username = Vcsim::kUser;
  creds.password = Vcsim::kPassword;
  return std::make_unique<SoapClient>(makeHttpsTransport(url, tls), url, std::move(creds));
}

}  // namespace

Backend::Backend(const Vcsim& vcsim) : client_(clientFor(vcsim)), vim_(*client_) {}

Deadline Backend::deadline() const {
  return std::chrono::steady_clock::now() + std::chrono::seconds(30);
}

std::set<std::string> Backend::vmNames() {
  std::set<std::string> names;
  auto r = vim_.retrieveFromContainer(vim_.client().content(deadline()).root_folder,
                                      {{"VirtualMachine", {"name"}}}, deadline());
  for (const auto& o : r.objects) names.insert(o.text("name"));
  return names;
}

std::set<std::string> Backend::folderNames() {
  std::set<std::string> names;
  auto r = vim_.retrieveFromContainer(vim_.client().content(deadline()).root_folder,
                                      {{"Folder", {"name"}}}, deadline());
  for (const auto& o : r.objects) names.insert(o.text("name"));
  return names;
}

std::set<std::string> Backend::datastoreFiles() {
  std::set<std::string> files;
  auto r = vim_.retrieveFromContainer(vim_.client().content(deadline()).root_folder,
                                      {{"Datastore", {"summary.url"}}}, deadline());
  for (const auto& o : r.objects) {
    std::string url = o.text("summary.url");  // vcsim: a local directory
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(url, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      files.insert(std::filesystem::relative(it->path(), url).string());
    }
  }
  return files;
}

std::optional<ObjectContent> Backend::vm(const std::string& name,
                                         const std::vector<std::string>& paths) {
  std::vector<std::string> all = paths;
  all.emplace_back("name");
  auto r = vim_.retrieveFromContainer(vim_.client().content(deadline()).root_folder,
                                      {{"VirtualMachine", all}}, deadline());
  for (auto& o : r.objects) {
    if (o.text("name") == name) {
      ObjectContent copy = o;
      keep_.push_back(std::move(r));  // the nodes live in r's documents
      return copy;
    }
  }
  return std::nullopt;
}

void Backend::runTask(const std::string& method, const MoRef& self, const std::string& args) {
  MoRef task = vim_.startTask(method, self, args, deadline());
  for (int i = 0; i < 500; ++i) {
    TaskInfo info = vim_.taskInfo(task, deadline());
    if (info.state == TaskState::kSuccess) return;
    if (info.state == TaskState::kError) throw *info.error;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error(method + " did not finish");
}

MoRef Backend::find(const std::string& inventory_path) {
  auto ref = vim_.findByInventoryPath(inventory_path, deadline());
  return ref.value_or(MoRef{});
}

std::string objectJson(const std::string& uid, const std::string& spec, const std::string& status) {
  return R"({"object":{"apiVersion":"infrastructure.banlieue.io/v1beta2","kind":"VSphereMachine",)"
         R"("metadata":{"name":"vm-)" +
         uid.substr(0, 8) + R"(","namespace":"default","uid":")" + uid +
         R"(","generation":1},"spec":)" + spec + R"(,"status":)" + status + "}}";
}

}  // namespace banlieue::vsphere::testing
