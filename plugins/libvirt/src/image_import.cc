#include "plugins/libvirt/src/image_import.h"

#include "plugins/libvirt/src/checksum.h"
#include "plugins/libvirt/src/domain_xml.h"
#include "plugins/libvirt/src/libvirt_handles.h"
#include "plugins/libvirt/src/machine_spec.h"
#include "plugins/libvirt/src/volume_io.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace banlieue::libvirt {

namespace json = sdk::json;
using sdk::Code;
using sdk::Error;
using sdk::Status;

std::vector<std::string> declaredPools(const rapidjson::Value* provider) {
  std::vector<std::string> pools;
  const auto* classes = json::find(provider, "spec.capabilities.storageClasses");
  if (classes == nullptr || !classes->IsArray()) return pools;
  for (const auto& c : classes->GetArray()) {
    std::string pool = json::stringOr(&c, "target.pool");
    if (!pool.empty() && std::find(pools.begin(), pools.end(), pool) == pools.end()) {
      pools.push_back(pool);
    }
  }
  return pools;
}

struct ImageImporter::Job {
  enum Phase { kVerifying, kUploading, kDone, kFailed };
  std::atomic<int> phase{kVerifying};
  std::atomic<uint64_t> bytes_done{0};
  std::atomic<uint64_t> bytes_total{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  Status result;  // guarded by mutex; set before phase becomes kDone/kFailed
  struct Placed {
    std::string pool, name, path;
  };
  std::vector<Placed> placed;  // guarded by mutex
  std::string volume_name;
  std::string failure_domain;
  std::thread thread;
};

namespace {

// The virtual size in a qcow2 header (bytes 24..31, big-endian), or 0 when not qcow2.
uint64_t qcow2VirtualSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[32] = {0};
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  if (in.gcount() != 32 || header[0] != 'Q' || header[1] != 'F' || header[2] != 'I' ||
      header[3] != 0xfb) {
    return 0;
  }
  uint64_t size = 0;
  for (int i = 24; i < 32; ++i) size = (size << 8) | header[i];
  return size;
}

std::string volumeFormatFor(const std::string& artifact_format) {
  if (artifact_format == "raw" || artifact_format == "iso") return "raw";
  if (artifact_format == "qcow2") return "qcow2";
  throw Error(Code::kInvalidArgument, "FormatUnsupported",
              "artifact format '" + artifact_format +
                  "' cannot be imported into libvirt (raw, qcow2 or iso)");
}

}  // namespace

ImageImporter::ImageImporter(Connection& connection, std::string provider_class,
                             std::vector<std::string> pools)
    : connection_(connection),
      provider_class_(std::move(provider_class)),
      pools_(std::move(pools)) {}

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
    // An unknown token (minted before a restart) is treated as absent: start over.
    if (job) return report(call, *request.operation_token, *job, reply);
  }

  if (request.image_name.empty()) {
    throw Error(Code::kInvalidArgument, "MissingField",
                "import_image: image.metadata.name is required");
  }
  std::string format = volumeFormatFor(request.artifact_format);
  std::string artifact_kind = json::stringOr(request.image, "status.buildArtifact.kind");
  if (!artifact_kind.empty() && artifact_kind != "cloudImage" &&
      !(artifact_kind == "iso" && request.artifact_format == "iso")) {
    throw Error(Code::kFailedPrecondition, "ArtifactNotCloudImage",
                "VMImage " + request.image_name + " has a buildArtifact of kind '" + artifact_kind +
                    "'; libvirt imports cloudImage artifacts");
  }
  // The VMImage's own checksum for our provider class, checked on top of the host's sha256.
  std::optional<ExpectedChecksum> source_checksum;
  if (const auto* sources = json::find(request.image, "spec.sources");
      sources != nullptr && sources->IsArray()) {
    for (const auto& s : sources->GetArray()) {
      if (json::stringOr(&s, "providerClass") != provider_class_) continue;
      std::string kind = json::stringOr(&s, "kind");
      if (kind != "Url" && kind != "BackingFile") {
        throw Error(Code::kInvalidArgument, "SourceKindUnsupported",
                    "VMImage " + request.image_name + " source kind '" + kind +
                        "' is not importable (Url or BackingFile)");
      }
      if (auto c = json::string(&s, "checksum"); c && !c->empty()) {
        source_checksum = parseChecksum(std::string(*c));
      }
    }
  }
  if (request.artifact_sha256.empty()) {
    throw Error(Code::kInvalidArgument, "ChecksumMissing",
                "import_image: artifact.sha256 is required (imports fail closed)");
  }
  ExpectedChecksum artifact_checksum = parseChecksum("sha256:" + request.artifact_sha256);
  // With a target (one of the importTargets introspection publishes), that pool only; without
  // one (a host from before per-pool imports), every declared pool.
  if (!request.target.empty() && !declaresPool(request.target)) {
    throw Error(Code::kFailedPrecondition, "PoolNotDeclared",
                "import target '" + request.target +
                    "' is not a pool of the Provider's storage classes (" + declaredPoolList() +
                    ")");
  }
  if (pools_.empty()) {
    throw Error(Code::kFailedPrecondition, "NoPoolDeclared",
                "the Provider declares no storage class with a pool target to import into");
  }
  const std::vector<std::string> pools =
      request.target.empty() ? pools_ : std::vector<std::string>{request.target};
  std::string volume = request.image_name + "-" + artifact_checksum.hex.substr(0, 12) + "." +
                       (request.artifact_format == "iso" ? "iso" : request.artifact_format);
  if (!isSafeVolumeName(volume)) {
    throw Error(Code::kInvalidArgument, "InvalidName",
                "volume name '" + volume + "' derived from the image name is not usable");
  }

  auto conn = std::make_shared<ConnRef>(connection_.acquire(call));
  for (const auto& name : pools) {
    auto pool = findPool(conn->get(), name);
    if (!pool) {
      throw Error(Code::kFailedPrecondition, "PoolNotFound",
                  "storage pool '" + name + "' declared by the Provider does not exist");
    }
    if (virStoragePoolIsActive(pool->get()) != 1) {
      throw Error(Code::kFailedPrecondition, "PoolInactive",
                  "storage pool '" + name + "' is not active");
    }
  }

  auto job = std::make_shared<Job>();
  job->volume_name = volume;
  job->failure_domain = request.failure_domain;
  std::string token = jobs_.add(job, "import");
  std::string path = request.artifact_path;
  int64_t declared_size = request.artifact_size_bytes;
  job->thread = std::thread(
      [job, conn, path, declared_size, pools, format, source_checksum, artifact_checksum] {
        std::vector<std::pair<std::string, std::string>> touched;  // pool, volume
        auto fail = [&](Status status) {
          // Nothing half-written stays behind: every volume this job wrote is deleted.
          for (const auto& [pool_name, vol_name] : touched) {
            try {
              if (auto pool = findPool(conn->get(), pool_name)) {
                if (auto vol = findVolume(pool->get(), vol_name))
                  virStorageVolDelete(vol->get(), 0);
              }
            } catch (...) {
            }
          }
          std::lock_guard lock(job->mutex);
          job->result = std::move(status);
          job->phase = Job::kFailed;
        };
        try {
          auto stop = [&job] { return job->stop.load(); };
          std::error_code ec;
          uint64_t size = std::filesystem::file_size(path, ec);
          if (ec)
            throw Error(Code::kFailedPrecondition, "ArtifactUnreadable", "cannot stat " + path);
          if (declared_size > 0 && static_cast<uint64_t>(declared_size) != size) {
            throw Error(Code::kFailedPrecondition, "ArtifactSizeMismatch",
                        "artifact is " + std::to_string(size) + " bytes, declared " +
                            std::to_string(declared_size));
          }
          job->bytes_total = size * pools.size();
          std::vector<ExpectedChecksum> checks{artifact_checksum};
          if (source_checksum && !(source_checksum->algorithm == artifact_checksum.algorithm &&
                                   source_checksum->hex == artifact_checksum.hex)) {
            checks.push_back(*source_checksum);
          }
          for (const auto& check : checks) {
            std::string actual = fileDigest(path, check.algorithm, stop);
            if (job->stop) throw Error(Code::kCancelled, "Cancelled", "the import was cancelled");
            if (actual != check.hex) {
              throw Error(Code::kFailedPrecondition, "ChecksumMismatch",
                          "artifact " + check.algorithm + " is " + actual + ", expected " +
                              check.hex + "; refusing to import");
            }
          }
          job->phase = Job::kUploading;
          uint64_t capacity = size;
          if (format == "qcow2") capacity = std::max(capacity, qcow2VirtualSize(path));
          uint64_t base = 0;
          for (const auto& pool_name : pools) {
            auto pool = findPool(conn->get(), pool_name);
            if (!pool) {
              throw Error(Code::kFailedPrecondition, "PoolNotFound",
                          "storage pool '" + pool_name + "' disappeared during the import");
            }
            auto vol = findVolume(pool->get(), job->volume_name);
            if (!vol) {
              std::string xml = volumeXml({job->volume_name, capacity, format, {}, {}});
              virStorageVolPtr created = virStorageVolCreateXML(pool->get(), xml.c_str(), 0);
              if (created == nullptr)
                raiseLast("creating volume " + pool_name + "/" + job->volume_name);
              vol = Volume(created);
            }
            touched.emplace_back(pool_name, job->volume_name);
            uploadFile(
                conn->get(), vol->get(), path, size,
                [&job, base](uint64_t sent) { job->bytes_done = base + sent; }, stop);
            base += size;
            (void)virStoragePoolRefresh(pool->get(), 0);
            std::lock_guard lock(job->mutex);
            job->placed.push_back({pool_name, job->volume_name, volumePath(vol->get())});
          }
          std::lock_guard lock(job->mutex);
          job->result = Status::ok();
          job->phase = Job::kDone;
        } catch (const Error& e) {
          fail(e.toStatus());
        } catch (const std::exception& e) {
          fail({Code::kInternal, "ImportFailed", e.what()});
        }
      });
  BANLIEUE_LOG(kInfo, "importing image " + request.image_name + " as " + volume + " into " +
                          (request.target.empty() ? std::to_string(pools.size()) + " pool(s)"
                                                  : "pool " + request.target));
  return report(call, token, *job, reply);
}

namespace {

// A volume an import of `image` made: "<image>-<12 lowercase hex>.<raw|qcow2|iso>".
bool isImportedVolumeOf(const std::string& volume, const std::string& image) {
  if (volume.size() < image.size() + 14 || volume.compare(0, image.size(), image) != 0 ||
      volume[image.size()] != '-') {
    return false;
  }
  std::string_view rest(volume);
  rest.remove_prefix(image.size() + 1);
  for (size_t i = 0; i < 12; ++i) {
    char c = rest[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  rest.remove_prefix(12);
  return rest == ".raw" || rest == ".qcow2" || rest == ".iso";
}

// Every volume of a pool, owned.
std::vector<Volume> poolVolumes(virStoragePoolPtr pool, const std::string& pool_name) {
  virStorageVolPtr* list = nullptr;
  int n = virStoragePoolListAllVolumes(pool, &list, 0);
  if (n < 0) raiseLast("listing the volumes of storage pool " + pool_name);
  std::vector<Volume> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.emplace_back(list[i]);
  free(list);  // NOLINT(cppcoreguidelines-no-malloc): libvirt allocates the array with malloc
  return out;
}

// Who still uses the volume at `path`: a volume backed by it (a machine's root disk made
// with backingVolume) or a domain that names it (install media). Empty when nobody does.
std::string userOf(virConnectPtr conn, const std::vector<std::string>& pools,
                   const std::string& path) {
  const std::string backing = "<backingStore>";
  for (const auto& pool_name : pools) {
    auto pool = findPool(conn, pool_name);
    if (!pool) continue;
    for (const auto& vol : poolVolumes(pool->get(), pool_name)) {
      CString xml(virStorageVolGetXMLDesc(vol.get(), 0));
      if (!xml) continue;  // vanished meanwhile
      std::string_view text(xml.get());
      auto at = text.find(backing);
      if (at != std::string_view::npos &&
          text.find("<path>" + path + "</path>", at) != std::string_view::npos) {
        const char* name = virStorageVolGetName(vol.get());
        return "volume " + pool_name + "/" + (name != nullptr ? name : "?") + " is backed by it";
      }
    }
  }
  virDomainPtr* domains = nullptr;
  int n = virConnectListAllDomains(conn, &domains, 0);
  if (n < 0) raiseLast("listing domains");
  std::vector<Domain> owned;
  owned.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) owned.emplace_back(domains[i]);
  free(domains);  // NOLINT(cppcoreguidelines-no-malloc): allocated by libvirt
  for (const auto& dom : owned) {
    CString xml(virDomainGetXMLDesc(dom.get(), 0));
    if (xml && std::string_view(xml.get()).find("'" + path + "'") != std::string_view::npos) {
      return std::string("domain ") + virDomainGetName(dom.get()) + " uses it";
    }
    if (xml && std::string_view(xml.get()).find("\"" + path + "\"") != std::string_view::npos) {
      return std::string("domain ") + virDomainGetName(dom.get()) + " uses it";
    }
  }
  return {};
}

}  // namespace

Status ImageImporter::deleteImage(const sdk::Call& call, const sdk::DeleteImageRequest& request) {
  if (request.image_name.empty()) {
    throw Error(Code::kInvalidArgument, "MissingField",
                "delete_image: image.metadata.name is required");
  }
  // With a target, that pool only. A pool the Provider no longer declares is not ours to
  // touch any more: nothing is removed there, and the deletion goes on without it.
  if (!request.target.empty() && !declaresPool(request.target)) {
    std::string message =
        "pool '" + request.target +
        "' is no longer a pool of the Provider's storage classes: " + request.image_name +
        "'s volume there, if any, stays";
    BANLIEUE_LOG(kWarn, message);
    call.event(BANLIEUE_EVENT_WARNING, "PoolNotDeclared", message);
    return Status::ok();
  }
  const std::vector<std::string> pools =
      request.target.empty() ? pools_ : std::vector<std::string>{request.target};
  ConnRef conn(connection_.acquire(call));
  struct Target {
    std::string pool;
    Volume volume;
    std::string name;
    std::string path;
  };
  std::vector<Target> targets;
  for (const auto& pool_name : pools) {
    auto pool = findPool(conn.get(), pool_name);
    if (!pool) continue;  // a pool that is gone holds nothing of ours any more
    if (virStoragePoolIsActive(pool->get()) != 1) {
      throw Error(Code::kFailedPrecondition, "PoolInactive",
                  "storage pool '" + pool_name + "' is not active: cannot remove " +
                      request.image_name + "'s volumes");
    }
    (void)virStoragePoolRefresh(pool->get(), 0);
    for (auto& vol : poolVolumes(pool->get(), pool_name)) {
      const char* name = virStorageVolGetName(vol.get());
      if (name == nullptr) continue;
      bool ours = isImportedVolumeOf(name, request.image_name) ||
                  (!request.resolved_ref.empty() && request.resolved_ref == name &&
                   isImportedVolumeOf(request.resolved_ref, request.image_name));
      if (!ours) continue;
      std::string path = volumePath(vol.get());
      targets.push_back({pool_name, std::move(vol), name, std::move(path)});
    }
  }
  // Nothing is removed while any of it is in use: a machine's disk must never lose its base.
  for (const auto& t : targets) {
    if (std::string user = userOf(conn.get(), pools_, t.path); !user.empty()) {
      throw Error(Code::kFailedPrecondition, "ImageInUse",
                  "volume " + t.pool + "/" + t.name + " cannot be removed: " + user);
    }
  }
  if (call.cancelled()) {
    throw Error(Code::kCancelled, "Cancelled", "the call was cancelled or ran out of time");
  }
  for (const auto& t : targets) {
    if (virStorageVolDelete(t.volume.get(), 0) != 0) {
      auto error = LibvirtError::last();
      if (!error.isNotFound()) throw toError(error, "deleting volume " + t.pool + "/" + t.name);
    }
  }
  if (!targets.empty()) {
    BANLIEUE_LOG(kInfo, "deleted " + std::to_string(targets.size()) + " volume(s) of image " +
                            request.image_name);
    call.event(BANLIEUE_EVENT_NORMAL, "ImageDeleted",
               "deleted " + std::to_string(targets.size()) + " volume(s) of " + request.image_name);
  }
  return Status::ok();
}

bool ImageImporter::declaresPool(const std::string& pool) const {
  return std::find(pools_.begin(), pools_.end(), pool) != pools_.end();
}

std::string ImageImporter::declaredPoolList() const {
  if (pools_.empty()) return "none";
  std::string out;
  for (const auto& pool : pools_) out += (out.empty() ? "" : ", ") + pool;
  return out;
}

Status ImageImporter::report(const sdk::Call& call, const std::string& token, Job& job,
                             sdk::Reply& reply) {
  auto& a = reply.allocator();
  int phase = job.phase.load();
  if (phase == Job::kVerifying || phase == Job::kUploading) {
    rapidjson::Value progress(rapidjson::kObjectType);
    progress.AddMember(
        "phase", rapidjson::StringRef(phase == Job::kVerifying ? "Verifying" : "Uploading"), a);
    progress.AddMember("bytesDone", job.bytes_done.load(), a);
    progress.AddMember("bytesTotal", job.bytes_total.load(), a);
    reply.status().AddMember("progress", progress, a);
    reply.setOperation(token, "import of " + job.volume_name);
    reply.requeueAfter(std::chrono::seconds(1));
    return Status::inProgress("Importing", job.volume_name + ": " +
                                               std::to_string(job.bytes_done.load()) + "/" +
                                               std::to_string(job.bytes_total.load()) + " bytes");
  }
  jobs_.finish(token, job);
  // No "operation" in the body: OK clears the stored token, and after a failure the token is
  // unknown to us, so the next call starts over (the schema has no null operation).
  std::lock_guard lock(job.mutex);
  if (phase == Job::kFailed) {
    call.event(BANLIEUE_EVENT_WARNING, job.result.reason(), job.result.message());
    return job.result;
  }
  auto& status = reply.status();
  status.AddMember("ready", true, a);
  status.AddMember("resolvedRef", json::stringValue(job.volume_name, a), a);
  rapidjson::Value zone(rapidjson::kObjectType);
  zone.AddMember("name", json::stringValue(job.failure_domain, a), a);
  zone.AddMember("ready", true, a);
  zone.AddMember("resolvedRef", json::stringValue(job.volume_name, a), a);
  rapidjson::Value zones(rapidjson::kArrayType);
  zones.PushBack(zone, a);
  status.AddMember("zones", zones, a);
  rapidjson::Value volumes(rapidjson::kArrayType);
  for (const auto& p : job.placed) {
    rapidjson::Value v(rapidjson::kObjectType);
    v.AddMember("pool", json::stringValue(p.pool, a), a);
    v.AddMember("name", json::stringValue(p.name, a), a);
    v.AddMember("path", json::stringValue(p.path, a), a);
    volumes.PushBack(v, a);
  }
  status.AddMember("volumes", volumes, a);
  call.event(
      BANLIEUE_EVENT_NORMAL, "ImageImported",
      "imported " + job.volume_name + " into " + std::to_string(job.placed.size()) + " pool(s)");
  return Status::ok();
}

}  // namespace banlieue::libvirt
