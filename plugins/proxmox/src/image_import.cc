#include "plugins/proxmox/src/image_import.h"

#include "plugins/proxmox/src/artifact_check.h"
#include "plugins/proxmox/src/errors.h"
#include "plugins/proxmox/src/inventory.h"

#include <banlieue/sdk/uri.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

namespace banlieue::proxmox {

namespace json = sdk::json;
using sdk::Code;
using sdk::Error;
using sdk::Status;

namespace {

// One API request inside the import; the tasks themselves may run much longer.
constexpr std::chrono::seconds kRequestTimeout{30};
// How long a PVE import or template task may take before the import gives up.
constexpr std::chrono::minutes kTaskTimeout{60};
constexpr std::chrono::milliseconds kImportTaskPoll{200};
constexpr int kVmidAttempts = 6;

Deadline requestDeadline() {
  return std::chrono::steady_clock::now() + kRequestTimeout;
}

// PVE's import-from takes these disk formats from an "import" storage (by file extension).
std::string importExtension(const std::string& format) {
  if (format == "qcow2" || format == "raw" || format == "vmdk") return format;
  throw Error(Code::kInvalidArgument, "FormatUnsupported",
              "artifact format '" + format +
                  "' cannot become a Proxmox template disk (qcow2, raw or vmdk)");
}

}  // namespace

struct ImageImporter::Job {
  enum Phase { kVerifying, kUploading, kImporting, kDone, kFailed };
  std::atomic<int> phase{kVerifying};
  std::atomic<uint64_t> bytes_done{0};
  std::atomic<uint64_t> bytes_total{0};
  std::atomic<bool> stop{false};
  // Inputs, fixed before the thread starts.
  std::string image;
  std::string node;  // the failure domain
  std::string artifact_path;
  std::string format;
  std::vector<Digest> digests;
  std::string template_name;
  // Outputs, guarded by mutex; set before phase becomes kDone/kFailed.
  std::mutex mutex;
  Status result;
  int64_t vmid = 0;
  std::string storage;
  std::thread thread;
};

std::string templateName(const std::string& image, const std::string& sha256) {
  // PVE names are DNS names; Kubernetes object names already are.
  return image.substr(0, 50) + "-" + sha256.substr(0, 12);
}

ImageImporter::ImageImporter(const PveClient& client, const NodeFiles& files,
                             std::string provider_class, std::vector<std::string> storages)
    : client_(client),
      files_(files),
      provider_class_(std::move(provider_class)),
      storages_(std::move(storages)) {}

ImageImporter::~ImageImporter() {
  shutdown();
}

void ImageImporter::shutdown() {
  jobs_.stopAll();
}

Status ImageImporter::importImage(const sdk::Call& call, const sdk::ImportImageRequest& request,
                                  sdk::Reply& reply) {
  if (request.operation_token) {
    std::shared_ptr<Job> job = jobs_.find(*request.operation_token);
    // A token from before a restart names no job: start over (the template name makes the
    // new attempt find whatever the old one finished).
    if (job) return report(*request.operation_token, job, call, reply);
  }
  if (request.image_name.empty()) {
    throw Error(Code::kInvalidArgument, "MissingField", "import_image: image.metadata.name");
  }
  if (request.failure_domain.empty()) {
    throw Error(Code::kInvalidArgument, "MissingField",
                "import_image: failureDomain (the PVE node) is required");
  }
  auto job = std::make_shared<Job>();
  job->image = request.image_name;
  job->node = request.failure_domain;
  job->artifact_path = request.artifact_path;
  job->format = importExtension(request.artifact_format);
  if (request.artifact_sha256.empty()) {
    throw Error(Code::kInvalidArgument, "ChecksumMissing",
                "import_image: artifact.sha256 is required; imports fail closed");
  }
  job->digests.push_back(parseDigest("sha256:" + request.artifact_sha256));
  // The VMImage's own checksum for our class, checked on top of the host's sha256.
  if (const auto* sources = json::find(request.image, "spec.sources");
      sources != nullptr && sources->IsArray()) {
    for (const auto& source : sources->GetArray()) {
      if (json::stringOr(&source, "providerClass") != provider_class_) continue;
      std::string checksum = json::stringOr(&source, "checksum");
      if (checksum.empty()) continue;
      Digest d = parseDigest(checksum);
      if (std::find(job->digests.begin(), job->digests.end(), d) == job->digests.end()) {
        job->digests.push_back(std::move(d));
      }
    }
  }
  job->template_name = templateName(job->image, job->digests.front().hex);
  std::error_code ec;
  job->bytes_total = std::filesystem::file_size(job->artifact_path, ec);
  if (ec) {
    throw Error(Code::kFailedPrecondition, "ArtifactUnreadable",
                "cannot stat " + job->artifact_path + ": " + ec.message());
  }
  if (request.artifact_size_bytes > 0 &&
      static_cast<uint64_t>(request.artifact_size_bytes) != job->bytes_total) {
    throw Error(Code::kFailedPrecondition, "ArtifactSizeMismatch",
                job->artifact_path + " is " + std::to_string(job->bytes_total.load()) +
                    " bytes, the request says " + std::to_string(request.artifact_size_bytes));
  }
  std::string token = jobs_.add(job, "import");
  job->thread = std::thread([this, job] { run(*job); });
  BANLIEUE_LOG(kInfo, "importing image " + job->image + " onto node " + job->node + " as " +
                          job->template_name);
  return report(token, job, call, reply);
}

namespace {

// Waits for a task the import started; throws on failure, timeout or stop.
void awaitTask(const PveClient& client, const std::string& node, const std::string& upid,
               const std::string& what, const std::atomic<bool>& stop) {
  const auto give_up = std::chrono::steady_clock::now() + kTaskTimeout;
  for (;;) {
    TaskStatus task = client.task(node, upid, requestDeadline());
    if (!task.running) {
      if (task.ok()) return;
      std::string message = what;
      message.append(" failed on node ").append(node).append(": ").append(task.exit_status);
      throw Error(Code::kAborted, "TaskFailed", message);
    }
    if (stop) throw Error(Code::kCancelled, "Cancelled", what + " was abandoned by a shutdown");
    if (std::chrono::steady_clock::now() > give_up) {
      throw Error(Code::kDeadlineExceeded, "TaskTimeout", what + " did not finish in time");
    }
    std::this_thread::sleep_for(kImportTaskPoll);
  }
}

struct Existing {
  int64_t vmid = 0;
  bool is_template = false;
  std::string lock;
};

std::optional<Existing> findByName(const PveClient& client, const std::string& node,
                                   const std::string& name) {
  rapidjson::Document all =
      client.get("/nodes/" + sdk::pathSegment(node) + "/qemu", requestDeadline());
  if (!all.IsArray()) return std::nullopt;
  for (const auto& vm : all.GetArray()) {
    if (json::stringOr(&vm, "name") != name) continue;
    return Existing{asInt(json::member(&vm, "vmid")), asInt(json::member(&vm, "template")) != 0,
                    json::stringOr(&vm, "lock")};
  }
  return std::nullopt;
}

void destroyVm(const PveClient& client, const std::string& node, int64_t vmid,
               const std::atomic<bool>& stop) {
  rapidjson::Document upid =
      client.del("/nodes/" + sdk::pathSegment(node) + "/qemu/" + std::to_string(vmid) +
                     "?purge=1&destroy-unreferenced-disks=1",
                 requestDeadline());
  awaitTask(client, node, asString(&upid),
            "removal of the half-imported VM " + std::to_string(vmid), stop);
}

}  // namespace

namespace {

// A template an import of `image` made: templateName(image, <12 hex of a digest>).
bool isTemplateOf(const std::string& name, const std::string& image) {
  const std::string prefix = image.substr(0, 50) + "-";
  if (name.size() != prefix.size() + 12 || name.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

Status ImageImporter::deleteImage(const sdk::Call& call, const sdk::DeleteImageRequest& request,
                                  sdk::Reply& reply) {
  if (request.image_name.empty() || request.failure_domain.empty()) {
    throw Error(Code::kInvalidArgument, "MissingField",
                "delete_image: image.metadata.name and failureDomain (the PVE node) are required");
  }
  const std::string& node = request.failure_domain;
  const std::string what = "removal of " + request.image_name + "'s templates on node " + node;
  return withPveErrors(what, [&]() -> Status {
    if (request.operation_token) {
      TaskStatus task = client_.task(node, *request.operation_token, requestDeadline());
      if (task.running) {
        reply.setOperation(*request.operation_token, what);
        reply.requeueAfter(std::chrono::seconds(1));
        return Status::inProgress("Deleting", what);
      }
      if (!task.ok()) {
        return Status{Code::kAborted, "TaskFailed", what + " failed: " + task.exit_status};
      }
    }
    rapidjson::Document all =
        client_.get("/nodes/" + sdk::pathSegment(node) + "/qemu", requestDeadline());
    if (!all.IsArray()) {
      return Status{Code::kUnavailable, "MalformedAnswer",
                    "the guest listing of node " + node + " is not an array"};
    }
    for (const auto& vm : all.GetArray()) {
      if (asInt(json::member(&vm, "template")) == 0 ||
          !isTemplateOf(json::stringOr(&vm, "name"), request.image_name)) {
        continue;
      }
      const int64_t vmid = asInt(json::member(&vm, "vmid"));
      if (std::string lock = json::stringOr(&vm, "lock"); !lock.empty()) {
        return Status{Code::kUnavailable, "Locked",
                      "template " + std::to_string(vmid) + " is locked (" + lock + ")"};
      }
      if (call.cancelled()) return Status{Code::kCancelled, "Cancelled", what + " was cancelled"};
      rapidjson::Document upid =
          client_.del("/nodes/" + sdk::pathSegment(node) + "/qemu/" + std::to_string(vmid) +
                          "?purge=1&destroy-unreferenced-disks=1",
                      requestDeadline());
      reply.setOperation(asString(&upid), what);
      reply.requeueAfter(std::chrono::seconds(1));
      return Status::inProgress("Deleting", "template " + std::to_string(vmid) + " on " + node);
    }
    return Status::ok();
  });
}

void ImageImporter::run(Job& job) {
  std::optional<NodeVolume> staged;
  std::unique_ptr<NodeSftp> sftp;
  int64_t created = 0;
  const std::atomic<bool> never{false};
  auto finish = [&job](Status status, int64_t vmid, std::string storage) {
    std::lock_guard lock(job.mutex);
    job.result = std::move(status);
    job.vmid = vmid;
    job.storage = std::move(storage);
    job.phase = job.result.isOk() ? Job::kDone : Job::kFailed;
  };
  std::string storage;
  int64_t made = 0;  // the template, once it exists
  Status status;
  // Nothing may escape a worker thread: what withPveErrors does not map becomes INTERNAL.
  try {
    status = withPveErrors("import of " + job.image + " onto node " + job.node, [&] {
      // 1. The checksum gate: nothing is written anywhere before it passes.
      verifyArtifact(job.artifact_path, job.digests, [&job] { return job.stop.load(); });
      // 2. The node and the storage that receives the template's disk.
      std::vector<NodeInfo> nodes = listNodes(client_, requestDeadline());
      auto node = std::find_if(nodes.begin(), nodes.end(),
                               [&](const NodeInfo& n) { return n.name == job.node; });
      if (node == nodes.end()) {
        return Status{Code::kNotFound, "NodeNotFound",
                      "failure domain '" + job.node + "' is not a node of the PVE cluster"};
      }
      if (!node->online) {
        return Status{Code::kUnavailable, "NodeOffline", "node '" + job.node + "' is offline"};
      }
      loadNodeDetails(client_, *node, requestDeadline());
      for (const auto& s : storages_) {
        auto it = node->storages.find(s);
        if (it != node->storages.end() && it->second.count("images") != 0) {
          storage = s;
          break;
        }
      }
      if (storage.empty()) {
        return Status{
            Code::kFailedPrecondition, "StorageNotFound",
            "node '" + job.node + "' has none of the Provider's storages with content 'images'"};
      }
      // 3. A template from an earlier attempt is the answer; a half-made VM is removed.
      if (auto existing = findByName(client_, job.node, job.template_name)) {
        if (existing->is_template) {
          made = existing->vmid;
          return Status::ok();
        }
        if (!existing->lock.empty()) {
          return Status{Code::kUnavailable, "Locked",
                        "VM " + std::to_string(existing->vmid) + " (" + job.template_name +
                            ") is locked (" + existing->lock + "); the import retries"};
        }
        destroyVm(client_, job.node, existing->vmid, job.stop);
      }
      // 4. The bytes, over SFTP into the node's import storage.
      job.phase = Job::kUploading;
      staged = files_.place(job.node, "import", job.template_name + "." + job.format, storages_,
                            requestDeadline());
      sftp = files_.open(job.node, requestDeadline());
      sftp->ensureDirectory(staged->remote_path.substr(0, staged->remote_path.rfind('/')));
      sftp->upload(
          job.artifact_path, staged->remote_path, [&job](uint64_t n) { job.bytes_done = n; },
          [&job] { return job.stop.load(); });
      // 5. A VM whose disk is imported from that file, then made a template.
      job.phase = Job::kImporting;
      const std::string base = "/nodes/" + sdk::pathSegment(job.node) + "/qemu";
      std::string upid;
      for (int attempt = 0; attempt < kVmidAttempts && upid.empty(); ++attempt) {
        rapidjson::Document nextid = client_.get("/cluster/nextid", requestDeadline());
        Form form{{"vmid", asString(&nextid)},
                  {"name", job.template_name},
                  {"description", "Imported by banlieue from VMImage " + job.image + " (" +
                                      job.digests.front().algorithm + ":" +
                                      job.digests.front().hex + ")"},
                  {"scsihw", "virtio-scsi-single"},
                  {"scsi0", storage + ":0,import-from=" + staged->volid()},
                  {"boot", "order=scsi0"},
                  {"ostype", "l26"},
                  {"serial0", "socket"},
                  {"agent", "1"}};
        try {
          rapidjson::Document answer = client_.post(base, form, requestDeadline());
          upid = asString(&answer);
          created = asInt(&nextid);
        } catch (const PveError& e) {
          if (!e.isVmidTaken()) throw;
        }
      }
      if (upid.empty()) {
        return Status{Code::kAlreadyExists, "VmidCollision",
                      "every VMID PVE offered for the template of " + job.image + " was taken"};
      }
      awaitTask(client_, job.node, upid, "import of " + staged->volid(), job.stop);
      rapidjson::Document answer =
          client_.post(base + "/" + std::to_string(created) + "/template", {}, requestDeadline());
      awaitTask(client_, job.node, asString(&answer), "conversion to a template", job.stop);
      made = std::exchange(created, 0);
      return Status::ok();
    });
  } catch (const std::exception& e) {
    status = {Code::kInternal, "ImportFailed", "import of " + job.image + ": " + e.what()};
  }
  // Whatever happened, the staging file goes, and a VM that never became a template too.
  try {
    if (staged && sftp) sftp->remove(staged->remote_path);
  } catch (const std::exception& e) {
    BANLIEUE_LOG(kWarn, "import of " + job.image + ": staging file " + staged->remote_path +
                            " left on node " + job.node + ": " + e.what());
  }
  if (created != 0) {
    Status cleanup;
    try {
      cleanup = withPveErrors("cleanup", [&] {
        destroyVm(client_, job.node, created, never);
        return Status::ok();
      });
    } catch (const std::exception& e) {
      cleanup = {Code::kInternal, "CleanupFailed", e.what()};
    }
    if (!cleanup.isOk()) {
      BANLIEUE_LOG(kWarn, "import of " + job.image + ": VM " + std::to_string(created) +
                              " on node " + job.node + " not removed: " + cleanup.message());
    }
  }
  // Reported only now, so a finished import has left nothing behind on the node.
  finish(std::move(status), made, storage);
}

Status ImageImporter::report(const std::string& token, const std::shared_ptr<Job>& job,
                             const sdk::Call& call, sdk::Reply& reply) {
  auto& a = reply.allocator();
  const int phase = job->phase.load();
  if (phase != Job::kDone && phase != Job::kFailed) {
    static constexpr const char* kNames[] = {"Verifying", "Uploading", "Importing"};
    rapidjson::Value progress(rapidjson::kObjectType);
    progress.AddMember("phase", rapidjson::StringRef(kNames[phase]), a);
    progress.AddMember("bytesDone", job->bytes_done.load(), a);
    progress.AddMember("bytesTotal", job->bytes_total.load(), a);
    reply.status().AddMember("progress", progress, a);
    reply.setOperation(token, "import of " + job->image + " onto " + job->node);
    reply.requeueAfter(std::chrono::seconds(1));
    return Status::inProgress(kNames[phase], job->template_name + " on " + job->node + ": " +
                                                 std::to_string(job->bytes_done.load()) + "/" +
                                                 std::to_string(job->bytes_total.load()) +
                                                 " bytes");
  }
  jobs_.finish(token, *job);
  std::lock_guard lock(job->mutex);
  if (phase == Job::kFailed) {
    call.event(BANLIEUE_EVENT_WARNING, job->result.reason(), job->result.message());
    return job->result;
  }
  // The perProvider row's zone for this failure domain: the template's VMID is what a
  // ProxmoxMachine on this node clones (spec.templateVmid).
  const std::string vmid = std::to_string(job->vmid);
  auto& status = reply.status();
  status.AddMember("ready", true, a);
  rapidjson::Value zone(rapidjson::kObjectType);
  zone.AddMember("name", json::stringValue(job->node, a), a);
  zone.AddMember("ready", true, a);
  zone.AddMember("resolvedRef", json::stringValue(vmid, a), a);
  rapidjson::Value zones(rapidjson::kArrayType);
  zones.PushBack(zone, a);
  status.AddMember("zones", zones, a);
  status.AddMember("templateName", json::stringValue(job->template_name, a), a);
  status.AddMember("storage", json::stringValue(job->storage, a), a);
  call.event(BANLIEUE_EVENT_NORMAL, "ImageImported",
             "template " + job->template_name + " (VMID " + vmid + ") on node " + job->node);
  return Status::ok();
}

}  // namespace banlieue::proxmox
