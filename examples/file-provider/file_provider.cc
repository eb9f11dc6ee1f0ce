// The "file" backend: a VM is a JSON file in a directory. Small enough to read in one
// sitting, complete enough to pass `banlieue plugin check`: it shows how a third party writes
// a provider with the SDK alone (one class, one export macro) and ships it with its own CRD.
#include <banlieue/sdk/change_log.h>
#include <banlieue/sdk/plugin.h>
#include <banlieue/sdk/restart.h>

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace json = banlieue::sdk::json;
using banlieue::sdk::Call;
using banlieue::sdk::Code;
using banlieue::sdk::Error;
using banlieue::sdk::Reply;
using banlieue::sdk::Status;

constexpr std::string_view kKind = "FileMachine";

Status unsupportedKind(const std::string& kind) {
  return {Code::kInvalidArgument, "UnsupportedKind",
          "the file provider serves FileMachine, not " + kind};
}

// Which file a name holds: its inode, size and modification time survive the rename that puts
// it in place, so a stamp taken before the rename recognises the file after it.
struct FileStamp {
  ino_t inode = 0;
  off_t size = 0;
  int64_t modified_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stampOf(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{st.st_ino, st.st_size,
                   int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

// Writes atomically: a reader never sees half a VM. `before_rename` sees the written file.
void writeFile(const fs::path& path, const std::string& content,
               const std::function<void(const fs::path& written)>& before_rename = {}) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out) throw Error(Code::kUnavailable, "WriteFailed", "cannot write " + tmp.string());
  }
  if (before_rename) before_rename(tmp);
  fs::rename(tmp, path);
}

// The serial console of a file VM, simulated as a guest's getty would behave: a banner with
// the VM's name, then an echo of what is typed; every typed line is appended to
// <vm file>.console, the backend-side trace a test reads. Ctrl-D (0x04) ends the stream, as a
// guest powering off does.
class FileConsole final : public banlieue::sdk::Console {
 public:
  FileConsole(fs::path log, const std::string& name)
      : log_(std::move(log)),
        pending_("file VM " + name + " serial console\r\n" + name + " login: ") {}

  Status read(char* buf, size_t len, std::chrono::milliseconds timeout, size_t& n) override {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return !pending_.empty() || ended_; });
    n = std::min(len, pending_.size());
    pending_.copy(buf, n);
    pending_.erase(0, n);
    if (n == 0 && ended_) return {Code::kOutOfRange, "ConsoleClosed", "the file VM powered off"};
    return Status::ok();
  }

  Status write(std::string_view data, size_t& n) override {
    std::lock_guard lock(mutex_);
    if (ended_) return {Code::kOutOfRange, "ConsoleClosed", "the file VM powered off"};
    n = data.size();
    for (char c : data) {
      if (c == '\x04') {
        ended_ = true;
        break;
      }
      if (c == '\r' || c == '\n') {
        pending_ += "\r\n";
        std::ofstream(log_, std::ios::app) << line_ << "\n";
        line_.clear();
      } else {
        pending_ += c;
        line_ += c;
      }
    }
    changed_.notify_all();
    return Status::ok();
  }

 private:
  fs::path log_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  std::string line_;
  bool ended_ = false;
};

class FileInstance final : public banlieue::sdk::Instance {
 public:
  FileInstance(fs::path root, int create_seconds, std::vector<std::string> zones, bool settles)
      : root_(std::move(root)),
        create_seconds_(create_seconds),
        zones_(std::move(zones)),
        settles_(settles) {}

  ~FileInstance() override { stopWatching(); }
  void shutdown(const Call&) override { stopWatching(); }

  // One failure domain per zone of the endpoint (`local` when it names none). A directory
  // stores any disk and attaches no network, so every storage and network class the Provider
  // declares is available in each zone: VMClasses written for other backends schedule here.
  Status introspect(const Call&, const banlieue::sdk::IntrospectRequest& request,
                    Reply& reply) override {
    countCall("introspect", "-");
    auto& a = reply.allocator();
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    rapidjson::Value fds(rapidjson::kArrayType);
    for (const auto& zone : zones_) {
      rapidjson::Value labels(rapidjson::kObjectType);
      labels.AddMember("host", json::stringValue(host, a), a);
      labels.AddMember("zone", json::stringValue(zone, a), a);
      rapidjson::Value attributes(rapidjson::kObjectType);
      attributes.AddMember("availableStorageClasses",
                           declaredClasses(request.provider, "storageClasses", a), a);
      attributes.AddMember("availableNetworkClasses",
                           declaredClasses(request.provider, "networkClasses", a), a);
      rapidjson::Value fd(rapidjson::kObjectType);
      fd.AddMember("name", json::stringValue(zone, a), a);
      fd.AddMember("labels", labels, a);
      fd.AddMember("attributes", attributes, a);
      fds.PushBack(fd, a);
    }
    reply.body().AddMember("failureDomains", fds, a);
    return Status::ok();
  }

  // A long create when the endpoint asks for one (file:///dir?createSeconds=N): the first call
  // starts it and answers IN_PROGRESS with a token, later calls poll it, the way a hypervisor
  // task is polled. Every start is journalled, so a test can count how often a VM was begun.
  Status reconcile(const Call& call, const banlieue::sdk::ReconcileRequest& request,
                   Reply& reply) override {
    countCall("reconcile", request.namespace_ + "/" + request.name);
    if (request.kind != kKind) return unsupportedKind(request.kind);
    if (call.cancelled()) return {Code::kCancelled, "Cancelled", "cancelled"};
    fs::path file = vmFile(request);
    std::string desired = json::stringOr(request.spec, "desiredPowerState", "PoweredOn");
    if (create_seconds_ > 0 && !fs::exists(file)) {
      fs::path marker = file;
      marker += ".creating";
      // The start in milliseconds, and the next poll when the create will be done: a
      // benchmark's backend takes createSeconds per create, not that plus a poll interval.
      auto now_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      };
      if (!fs::exists(marker)) {
        writeFile(marker, std::to_string(now_ms()));
        journal("create-started " + request.namespace_ + "/" + request.name + " " + request.uid);
      }
      std::ifstream in(marker);
      int64_t started_ms = 0;
      in >> started_ms;
      int64_t left_ms = int64_t{create_seconds_} * 1000 - (now_ms() - started_ms);
      if (left_ms > 0) {
        reply.setOperation("create/" + request.uid, "creating " + request.name);
        reply.requeueAfter(std::chrono::milliseconds(std::min<int64_t>(left_ms, 500)));
        return Status::inProgress("Creating", "creating " + request.name);
      }
      fs::remove(marker);
      journal("create-finished " + request.namespace_ + "/" + request.name + " " + request.uid);
    }
    // A restart request (banlieue/sdk/restart.h): the "guest" restarts when it runs; the count
    // in the file lets a test see that one request is one restart.
    int64_t restarts = 0;
    bool was_running = false;
    if (fs::exists(file)) {
      std::ifstream in(file);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      rapidjson::Document before;
      before.Parse(text.c_str());
      restarts = json::integer(&before, "restarts").value_or(0);
      was_running = json::stringOr(&before, "state") == "running";
    }
    const std::string restart = banlieue::sdk::unansweredRestart(request);
    const bool restarting = !restart.empty() && was_running && desired != "PoweredOff";
    if (restarting) {
      ++restarts;
      journal("restarted " + request.namespace_ + "/" + request.name + " " + request.uid);
    }
    rapidjson::Document vm(rapidjson::kObjectType);
    auto& va = vm.GetAllocator();
    vm.AddMember("restarts", restarts, va);
    vm.AddMember("name", json::stringValue(request.name, va), va);
    vm.AddMember("uid", json::stringValue(request.uid, va), va);
    vm.AddMember("cpus", json::integer(request.spec, "cpus").value_or(1), va);
    vm.AddMember("memoryMiB", json::integer(request.spec, "memoryMiB").value_or(512), va);
    vm.AddMember("failureDomain", json::stringValue(zoneOf(request), va), va);
    vm.AddMember("userData", json::stringValue(json::stringOr(request.spec, "userData"), va), va);
    vm.AddMember("state", json::stringValue(desired == "PoweredOff" ? "stopped" : "running", va),
                 va);
    writeVm(file, json::serialize(vm));

    auto& a = reply.allocator();
    auto& status = reply.status();
    status.AddMember("providerID", json::stringValue("file://" + file.string(), a), a);
    rapidjson::Value init(rapidjson::kObjectType);
    init.AddMember("provisioned", true, a);
    status.AddMember("initialization", init, a);
    status.AddMember("failureDomain", json::stringValue(zoneOf(request), a), a);
    status.AddMember("observedPowerState",
                     json::stringValue(desired == "PoweredOff" ? "PoweredOff" : "PoweredOn", a), a);
    rapidjson::Value address(rapidjson::kObjectType);
    address.AddMember("type", "InternalIP", a);
    address.AddMember("address", "127.0.0.1", a);
    rapidjson::Value addresses(rapidjson::kArrayType);
    addresses.PushBack(address, a);
    status.AddMember("addresses", addresses, a);
    if (!restart.empty()) banlieue::sdk::answerRestart(reply, restart, restarting);
    reply.clearOperation();
    // The file now is what the spec asks, and nothing runs behind it: until the spec changes,
    // another call would write the same file and report the same status. Saying so spares the
    // backend the calls of passes that change nothing (the host's own writes); a restart was
    // answered above, so a repeat call finds it answered and restarts nothing.
    if (settles_) reply.settle();
    BANLIEUE_LOG(kInfo, "wrote " + file.string());
    return Status::ok();
  }

  Status finalize(const Call&, const banlieue::sdk::ReconcileRequest& request, Reply&) override {
    countCall("finalize", request.namespace_ + "/" + request.name);
    if (request.kind != kKind) return unsupportedKind(request.kind);
    std::error_code ec;
    fs::path marker = vmFile(request);
    marker += ".creating";
    fs::remove(marker, ec);
    forget(vmFile(request));
    fs::remove(vmFile(request), ec);  // already gone is fine: finalize is idempotent
    if (ec) return {Code::kUnavailable, "DeleteFailed", "cannot remove VM file: " + ec.message()};
    fs::remove_all(snapshotDir(vmFile(request)), ec);  // a VM's snapshots go with it
    if (ec) return {Code::kUnavailable, "DeleteFailed", "cannot remove snapshots: " + ec.message()};
    fs::remove(vmFile(request).string() + ".console", ec);  // and its console trace
    if (ec)
      return {Code::kUnavailable, "DeleteFailed", "cannot remove console trace: " + ec.message()};
    return Status::ok();
  }

  // SINCE ABI 1.4. The change feed: inotify on the directory tells when a VM file is written,
  // replaced or removed by anyone but this plugin (whose own writes it recognises by their
  // stamp), so a machine at rest costs the directory nothing, however many there are.
  Status watchChanges(const Call& call, const banlieue::sdk::WatchRequest& request,
                      Reply& reply) override {
    if (auto started = startWatching(); !started.isOk()) return started;
    return changes_.answer(call, request, reply);
  }

  // SINCE ABI 1.3. The serial console of a running file VM (FileConsole above).
  Status openConsole(const Call&, const banlieue::sdk::ConsoleRequest& request,
                     std::unique_ptr<banlieue::sdk::Console>& out, Reply& reply) override {
    countCall("console", request.provider_id);
    if (request.kind != kKind) return unsupportedKind(request.kind);
    if (request.console != "serial")
      return banlieue::sdk::unimplemented("console " + request.console);
    const std::string prefix = "file://";
    if (request.provider_id.rfind(prefix, 0) != 0) {
      return {Code::kFailedPrecondition, "MachineNotProvisioned", "the machine has no VM file yet"};
    }
    const fs::path file = request.provider_id.substr(prefix.size());
    std::ifstream in(file);
    if (!in) return {Code::kNotFound, "MachineNotFound", "no VM file " + file.string()};
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    rapidjson::Document vm;
    vm.Parse(text.c_str());
    if (json::stringOr(&vm, "state") != "running") {
      return {Code::kFailedPrecondition, "MachineNotRunning",
              "the file VM is stopped: a stopped VM has no serial console"};
    }
    const std::string name = json::stringOr(&vm, "name");
    out = std::make_unique<FileConsole>(file.string() + ".console", name);
    auto& a = reply.allocator();
    reply.status().AddMember("console", "serial", a);
    reply.status().AddMember(
        "description", json::stringValue("serial console of file VM " + name + " (simulated)", a),
        a);
    return Status::ok();
  }

  // SINCE ABI 1.2. A snapshot is a copy of the VM's file in <vm file>.snapshots/<name>.json;
  // its snapshotRef is its name (unique per VM). Revert copies it back; the next reconcile
  // writes the file from the spec again, as a hypervisor powers a reverted VM back to its spec.
  Status snapshot(const Call&, const banlieue::sdk::SnapshotRequest& request,
                  Reply& reply) override {
    countCall("snapshot", request.provider_id);
    using Action = banlieue::sdk::SnapshotRequest::Action;
    if (request.kind != kKind) return unsupportedKind(request.kind);
    const std::string prefix = "file://";
    if (request.provider_id.rfind(prefix, 0) != 0) {
      return {Code::kFailedPrecondition, "MachineNotProvisioned", "the machine has no VM file yet"};
    }
    const fs::path file = request.provider_id.substr(prefix.size());
    if (!fs::exists(file)) {
      return {Code::kNotFound, "MachineNotFound", "no VM file " + file.string()};
    }
    if (request.memory) {
      return {Code::kUnimplemented, "NotSupportedByBackend", "a file VM has no memory to keep"};
    }
    const fs::path dir = snapshotDir(file);
    auto& a = reply.allocator();
    const std::string& ref =
        request.action == Action::kCreate ? request.name : request.snapshot_ref;
    if ((request.action == Action::kRevert || request.action == Action::kDelete) &&
        (ref.empty() || ref.find('/') != std::string::npos)) {
      return {Code::kInvalidArgument, "InvalidSnapshotRef",
              "not a snapshot of this backend: " + ref};
    }
    const fs::path copy = dir / (ref + ".json");
    std::error_code ec;
    switch (request.action) {
      case Action::kCreate:
        if (!fs::exists(copy)) {
          fs::create_directories(dir);
          fs::copy_file(file, copy, ec);
          if (ec) return {Code::kUnavailable, "SnapshotFailed", ec.message()};
          journal("snapshot-created " + file.filename().string() + " " + ref);
        }
        reply.status().AddMember("snapshotRef", json::stringValue(ref, a), a);
        reply.status().AddMember("memory", false, a);
        return Status::ok();
      case Action::kList: {
        rapidjson::Value list(rapidjson::kArrayType);
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
          rapidjson::Value item(rapidjson::kObjectType);
          item.AddMember("name", json::stringValue(entry.path().stem().string(), a), a);
          item.AddMember("snapshotRef", json::stringValue(entry.path().stem().string(), a), a);
          list.PushBack(item, a);
        }
        reply.status().AddMember("snapshots", list, a);
        return Status::ok();
      }
      case Action::kRevert:
        if (!fs::exists(copy)) {
          return {Code::kNotFound, "SnapshotNotFound",
                  "no snapshot " + ref + " of " + file.string()};
        }
        fs::copy_file(copy, file, fs::copy_options::overwrite_existing, ec);
        if (ec) return {Code::kUnavailable, "RevertFailed", ec.message()};
        journal("reverted " + file.filename().string() + " " + ref);
        return Status::ok();
      case Action::kDelete:
        fs::remove(copy, ec);  // what is gone is deleted
        if (ec) return {Code::kUnavailable, "DeleteFailed", ec.message()};
        return Status::ok();
    }
    return {Code::kInvalidArgument, "UnknownAction", "unknown snapshot action"};
  }

  Status importImage(const Call&, const banlieue::sdk::ImportImageRequest& request,
                     Reply& reply) override {
    countCall("import_image", "-");
    if (request.image_name.empty()) {
      return {Code::kInvalidArgument, "MissingField",
              "import_image: image.metadata.name is required"};
    }
    fs::path images = root_ / "images";
    fs::create_directories(images);
    fs::path target = images / (request.image_name + "." + request.artifact_format);
    std::error_code ec;
    fs::copy_file(request.artifact_path, target, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return {Code::kUnavailable, "ImportFailed", "cannot copy the artifact: " + ec.message()};
    auto& a = reply.allocator();
    reply.status().AddMember("failureDomain", json::stringValue(request.failure_domain, a), a);
    reply.status().AddMember("path", json::stringValue(target.string(), a), a);
    return Status::ok();
  }

 private:
  // The names of the Provider's spec.capabilities.<list> entries.
  static rapidjson::Value declaredClasses(const rapidjson::Value* provider, const char* list,
                                          rapidjson::Document::AllocatorType& a) {
    rapidjson::Value names(rapidjson::kArrayType);
    const auto* capabilities = json::find(provider, "spec.capabilities");
    const auto* entries = json::member(capabilities, list);
    if (entries == nullptr || !entries->IsArray()) return names;
    for (const auto& entry : entries->GetArray()) {
      std::string name = json::stringOr(&entry, "name");
      if (!name.empty()) names.PushBack(json::stringValue(name, a), a);
    }
    return names;
  }

  // The zone the controller placed the machine in, when it is one of ours.
  std::string zoneOf(const banlieue::sdk::ReconcileRequest& request) const {
    std::string wanted = json::stringOr(request.spec, "failureDomain");
    for (const auto& zone : zones_) {
      if (zone == wanted) return zone;
    }
    return zones_.front();
  }

  fs::path vmFile(const banlieue::sdk::ReconcileRequest& request) const {
    std::string ns = request.namespace_.empty() ? "default" : request.namespace_;
    return root_ / (ns + "_" + request.name + ".json");
  }

  static fs::path snapshotDir(const fs::path& vm_file) {
    fs::path dir = vm_file;
    dir += ".snapshots";
    return dir;
  }

  // Writes a VM file, remembering what it wrote: the change feed reports a VM file only when it
  // holds something else.
  void writeVm(const fs::path& file, const std::string& content) {
    writeFile(file, content, [&](const fs::path& written) {
      std::lock_guard lock(written_mu_);
      written_[file.filename().string()] = stampOf(written);
    });
  }

  // The VM file is being removed by this plugin.
  void forget(const fs::path& file) {
    std::lock_guard lock(written_mu_);
    written_[file.filename().string()] = std::nullopt;
  }

  Status startWatching() {
    std::lock_guard lock(watch_mu_);
    if (watcher_.joinable()) return Status::ok();
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0 || inotify_add_watch(fd, root_.c_str(),
                                    IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) < 0) {
      if (fd >= 0) close(fd);
      return {Code::kUnavailable, "WatchFailed", "cannot watch " + root_.string() + " (inotify)"};
    }
    inotify_fd_ = fd;
    watcher_ = std::thread([this] { watchLoop(); });
    return Status::ok();
  }

  void stopWatching() {
    std::lock_guard lock(watch_mu_);
    if (!watcher_.joinable()) return;
    stop_watching_ = true;
    watcher_.join();
    close(inotify_fd_);
    inotify_fd_ = -1;
  }

  // Reads the directory's events until stopped; a VM file (<ns>_<name>.json) that no longer
  // holds what this plugin wrote there is a change of its machine.
  void watchLoop() {
    alignas(inotify_event) char buffer[16384];
    while (!stop_watching_) {
      pollfd ready{inotify_fd_, POLLIN, 0};
      if (::poll(&ready, 1, 200) <= 0) continue;
      ssize_t n = read(inotify_fd_, buffer, sizeof(buffer));
      for (ssize_t at = 0; n > 0 && at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        if ((event->mask & IN_Q_OVERFLOW) != 0) {
          changes_.recordAll();  // the kernel dropped events: any VM may have changed
          continue;
        }
        if (event->len == 0) continue;
        std::string name = event->name;
        if (name.size() < 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
        if (changedBehindUs(name)) changes_.record("file://" + (root_ / name).string());
      }
    }
  }

  bool changedBehindUs(const std::string& name) {
    std::optional<FileStamp> now = stampOf(root_ / name);
    std::lock_guard lock(written_mu_);
    auto it = written_.find(name);
    return it == written_.end() || it->second != now;  // not what this instance left there
  }

  // Every call that reaches the backend is one line of `calls` in its directory: the backend's
  // own count, which a benchmark reads before and after a quiet minute (issue #23's
  // steady_state_backend_calls_60s), whatever the host believes it called.
  void countCall(const char* method, const std::string& target) const {
    std::ofstream out(root_ / "calls", std::ios::app);
    out << method << " " << target << "\n";
  }

  void journal(const std::string& line) const {
    std::ofstream out(root_ / "journal", std::ios::app);
    out << line << "\n";
  }

  fs::path root_;
  int create_seconds_ = 0;
  std::vector<std::string> zones_;  // never empty
  bool settles_ = true;  // false: replies never say settled, as from a plugin built before it
  banlieue::sdk::ChangeLog changes_;
  std::mutex written_mu_;
  // What this instance last left in each VM file, or nothing when it removed it.
  std::unordered_map<std::string, std::optional<FileStamp>> written_;
  std::mutex watch_mu_;
  std::thread watcher_;
  std::atomic<bool> stop_watching_ = false;
  int inotify_fd_ = -1;
};

// Splits `text` at every `separator`.
std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

Error invalidEndpoint(const std::string& message) {
  return Error(Code::kInvalidArgument, "InvalidEndpoint", message);
}

class FileProvider final : public banlieue::sdk::Provider {
 public:
  std::string_view name() const override { return "file"; }
  std::string_view version() const override { return "0.1.0"; }

  banlieue::sdk::Capabilities capabilities() const override {
    banlieue::sdk::Capabilities caps;
    caps.backend = "file";
    caps.kinds.push_back({"infrastructure.file.example.com",
                          "v1alpha1",
                          std::string(kKind),
                          {"reconcile", "finalize", "validate"}});
    caps.introspect = true;
    caps.import_image = true;
    caps.image_formats = {"raw", "qcow2", "iso"};
    caps.snapshot = true;
    caps.console = true;
    caps.watch_changes = true;
    return caps;
  }

  Status validate(const Call&, const banlieue::sdk::ValidateRequest& request,
                  Reply&) const override {
    if (request.kind != kKind) return unsupportedKind(request.kind);
    if (auto cpus = json::integer(request.object, "spec.cpus"); cpus && *cpus < 1) {
      return {Code::kInvalidArgument, "InvalidSpec", "spec.cpus must be at least 1"};
    }
    if (auto mem = json::integer(request.object, "spec.memoryMiB"); mem && *mem < 64) {
      return {Code::kInvalidArgument, "InvalidSpec", "spec.memoryMiB must be at least 64"};
    }
    return Status::ok();
  }

  // The Provider's endpoint is file:///absolute/directory (made when missing), optionally
  // followed by options: ?createSeconds=N (a create takes N seconds), zones=a,b (one failure
  // domain each) and settle=false (no reply says settled, so every pass calls the backend, as
  // for a plugin built before the flag), joined with '&'.
  std::unique_ptr<banlieue::sdk::Instance> createInstance(
      const Call&, banlieue::sdk::InstanceConfig config) override {
    const std::string prefix = "file://";
    if (config.endpoint.rfind(prefix, 0) != 0) {
      throw invalidEndpoint("spec.connection.endpoint must be file:///<directory>, got '" +
                            config.endpoint + "'");
    }
    std::string rest = config.endpoint.substr(prefix.size());
    int create_seconds = 0;
    std::vector<std::string> zones = {"local"};
    bool settles = true;
    if (auto q = rest.find('?'); q != std::string::npos) {
      std::string query = rest.substr(q + 1);
      rest.resize(q);
      for (const auto& option : split(query, '&')) {
        auto eq = option.find('=');
        std::string key = option.substr(0, eq);
        std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
        if (key == "createSeconds") {
          if (value.empty() || value.size() > 6 ||
              value.find_first_not_of("0123456789") != std::string::npos) {
            throw invalidEndpoint("createSeconds must be a number of seconds, got '" + value + "'");
          }
          create_seconds = std::stoi(value);
        } else if (key == "zones") {
          zones = split(value, ',');
          for (const auto& zone : zones) {
            if (zone.empty() || zone.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") !=
                                    std::string::npos) {
              throw invalidEndpoint(
                  "zones must be a comma-separated list of lower-case names, got '" + value + "'");
            }
          }
        } else if (key == "settle") {
          if (value != "true" && value != "false") {
            throw invalidEndpoint("settle must be true or false, got '" + value + "'");
          }
          settles = value == "true";
        } else {
          throw invalidEndpoint(
              "the endpoint options are createSeconds=<seconds>, zones=<a,b,...> and "
              "settle=<true|false>, got '" +
              option + "'");
        }
      }
    }
    fs::path root = rest;
    // A provider pod's writable places are volumes that start empty (its /tmp is an emptyDir),
    // so the backend makes its directory; what cannot be made is reported just below.
    std::error_code ec;
    fs::create_directories(root, ec);
    if (!fs::is_directory(root, ec) || access(root.c_str(), W_OK) != 0) {
      throw Error(Code::kUnavailable, "BackendUnreachable",
                  root.string() + " is not a writable directory");
    }
    return std::make_unique<FileInstance>(root, create_seconds, std::move(zones), settles);
  }
};

}  // namespace

BANLIEUE_PROVIDER_PLUGIN(FileProvider)
