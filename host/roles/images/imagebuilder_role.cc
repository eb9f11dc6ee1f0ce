#include "host/roles/images/imagebuilder_role.h"

#include "host/api/codec.h"
#include "host/api/vm_class.h"
#include "host/common/base64.h"
#include "host/kube/api_error.h"
#include "host/kube/discovery.h"
#include "host/roles/common/leadership.h"
#include "host/roles/common/role_process.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/checksum_job.h"
#include "host/roles/images/cloud_config_merge.h"
#include "host/roles/images/os_artifact.h"
#include "host/runtime/health_server.h"
#include "host/runtime/leader_election.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <rapidjson/document.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <fstream>
#include <mutex>
#include <random>
#include <thread>

namespace banlieue::roles::images {
namespace {

namespace json = sdk::json;
using runtime::annotation;
namespace fs = std::filesystem;
using runtime::Request;
using runtime::Result;

// Secrets are not watched (the imagebuilder may only read the ones VMImages name), so a
// missing or unmergeable cloud-config is looked at again after this long.
constexpr auto kSecretRecheck = std::chrono::seconds(30);

bool isHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The artifact's digest: for sha256 kairos' "<file>.sha256" sidecar when present, else computed.
StatusOr<std::string> artifactDigest(const fs::path& file, const std::string& algorithm) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return error(Code::kNotFound, "ArtifactMissing",
                 "the build is Ready but " + file.string() + " is not on the artifacts volume");
  }
  fs::path sidecar = file;
  sidecar += ".sha256";
  if (std::ifstream in(sidecar); in && algorithm == "sha256") {
    std::string hex;
    in >> hex;
    if (isHex64(hex)) return "sha256:" + hex;
  }
  auto digest = fileDigest(file, algorithm);
  if (!digest.ok()) return digest.status();
  return algorithm + ":" + *digest;
}

// The algorithm a build's digest is taken in: the pin's, so the two compare; else sha256.
std::string pinAlgorithm(const std::string& pin) {
  auto parsed = parseChecksum(pin);
  return parsed.ok() ? parsed->algorithm : "sha256";
}

// A pin on the source must name what was built. Unparsable pins fail closed too.
Status pinMatches(const std::string& pin, const std::string& built) {
  if (pin.empty()) return Status::ok();
  auto want = parseChecksum(pin);
  if (!want.ok()) {
    return error(Code::kInvalidArgument, want.status().reason(),
                 "spec.sources[].checksum '" + pin + "': " + want.status().message());
  }
  auto got = parseChecksum(built);
  if (got.ok() && got->algorithm == want->algorithm && got->hex == want->hex) return Status::ok();
  return error(Code::kFailedPrecondition, "ChecksumMismatch",
               "the built artifact is " + built + " but spec.sources[].checksum pins " + pin +
                   ": nothing is imported");
}

}  // namespace

ImageBuilderReconciler::ImageBuilderReconciler(kube::KubeClient& client, runtime::Informer& images,
                                               runtime::Informer& artifacts,
                                               runtime::Informer* jobs, ImageBuilderOptions options)
    : client_(client),
      images_(images),
      artifacts_(artifacts),
      jobs_(jobs),
      options_(std::move(options)) {}

std::string checksumJobSelector() {
  return std::string("app.kubernetes.io/component=") + kChecksumComponent;
}

ImageBuilderReconciler::Learned ImageBuilderReconciler::checksumFromJob(
    const api::VMImage& image, const api::BuildArtifact& built, const std::string& algorithm) {
  ChecksumJobParams p;
  p.image_name = image.metadata.name;
  p.image_uid = image.metadata.uid;
  p.os_artifact_name = built.os_artifact_ref;
  p.os_artifact_uid = built.os_artifact_uid;
  p.pvc_name = built.pvc_ref;
  p.artifact_file = built.file;
  p.algorithm = algorithm;
  p.job_namespace = options_.build_namespace;
  p.container_image = options_.job_image;
  std::string name = checksumJobName(p);
  std::string where = options_.build_namespace + "/" + name;
  Learned learned;
  auto job = jobs_->get(where);
  if (!job) {
    auto manifest = checksumJob(p);
    if (!manifest.ok()) {
      learned.failure = manifest.status();
      return learned;
    }
    auto created = client_.create(kube::resources::kJob, options_.build_namespace, *manifest);
    if (!created.ok() && !kube::isAlreadyExists(created.status())) {
      learned.failure =
          error(Code::kUnavailable, "ChecksumJobFailed",
                "cannot create the checksum Job " + where + ": " + created.status().message());
      return learned;
    }
    spdlog::info("vmimage {}: checksum Job {} created for {}", image.metadata.name, where,
                 built.file);
    learned.progress = "the artifact is built; Job " + where + " is computing its " + algorithm;
    return learned;
  }
  // The pod is read only once the Job has ended: its termination message carries the result.
  // `pods` owns what pod_ptr points into (the newest of the Job's pods).
  rapidjson::Document pods;
  const rapidjson::Value* pod_ptr = nullptr;
  if (const auto* conditions = json::find(job.get(), "status.conditions");
      conditions != nullptr && conditions->IsArray() && !conditions->Empty()) {
    auto listed = client_.list(kube::resources::kPod, options_.build_namespace,
                               {.label_selector = "job-name=" + name});
    if (listed.ok()) pods = std::move(*listed);
    const auto* items = json::member(&pods, "items");
    if (items != nullptr && items->IsArray()) {
      std::string newest;
      for (const auto& item : items->GetArray()) {
        std::string created = json::stringOr(&item, "metadata.creationTimestamp");
        if (pod_ptr == nullptr || created >= newest) {
          newest = created;
          pod_ptr = &item;
        }
      }
    }
  }
  auto outcome = checksumOutcome(*job, pod_ptr);
  switch (outcome.state) {
    case ChecksumOutcome::State::kRunning:
      learned.progress = "the artifact is built; Job " + where + " is computing its " + algorithm;
      return learned;
    case ChecksumOutcome::State::kFailed:
      learned.failure = error(Code::kFailedPrecondition, outcome.reason,
                              "checksum Job " + where + ": " + outcome.message);
      return learned;
    case ChecksumOutcome::State::kSucceeded: break;
  }
  auto parsed = parseChecksum(outcome.checksum);
  if (!parsed.ok() || parsed->algorithm != algorithm) {
    learned.failure = error(Code::kFailedPrecondition, "ChecksumJobFailed",
                            "checksum Job " + where + " reported '" + outcome.checksum +
                                "', not a " + algorithm + " digest");
    return learned;
  }
  learned.done = true;
  learned.checksum = outcome.checksum;
  return learned;
}

Status ImageBuilderReconciler::secretsHoldTheirKeys(
    const std::map<std::string, std::vector<std::string>>& needed,
    const std::string& overlay_secret) {
  for (const auto& [secret_name, keys] : needed) {
    bool overlay = secret_name == overlay_secret;
    std::string reason = overlay ? "IsoOverlayUnavailable" : "TrustedBootKeysUnavailable";
    std::string what = std::string(overlay ? "spec.isoOverlay" : "spec.trustedBoot") + " Secret " +
                       options_.build_namespace + "/" + secret_name;
    // Only the key names of the answer are looked at; the document goes out of scope here.
    auto secret = client_.get(kube::resources::kSecret, options_.build_namespace, secret_name);
    if (!secret.ok()) {
      return error(Code::kFailedPrecondition, reason,
                   what + " cannot be read: " + secret.status().message());
    }
    auto missing = missingSecretKeys(*secret, keys);
    if (!missing.empty()) {
      std::string message = what + " has no key ";
      for (size_t i = 0; i < missing.size(); ++i)
        message.append(i == 0 ? "" : ", ").append(missing[i]);
      return error(Code::kFailedPrecondition, reason, message);
    }
  }
  return Status::ok();
}

Result ImageBuilderReconciler::reconcile(const Request& request) {
  auto cached = images_.get(request.key());
  if (!cached) return Result::done();  // gone: owner references collect what we made
  auto decoded = api::fromJson<api::VMImage>(json::serialize(*cached));
  if (!decoded.ok()) return Result::terminal(decoded.status());
  const api::VMImage& image = *decoded;
  if (!image.metadata.deletion_timestamp.empty()) return Result::done();
  const std::string& name = image.metadata.name;
  const auto& current = image.status.build_artifact;

  auto publish = [&](const api::BuildArtifact& desired) -> Status {
    if (current && sameBuildArtifact(*current, desired)) return Status::ok();
    auto applied = client_.apply(
        kVMImageType, "", name, buildArtifactApply(name, desired),
        {.field_manager = kImageBuilderManager, .force = true, .subresource = "status"});
    if (!applied.ok()) return applied.status();
    spdlog::info("vmimage {}: buildArtifact {} ({})", name, desired.phase, desired.reason);
    return Status::ok();
  };

  auto plan = planBuild(image);
  if (!plan.ok()) {
    if (plan.status().reason() == "NoUrlSource") return Result::done();
    api::BuildArtifact failed;
    failed.phase = "Failed";
    failed.reason = plan.status().reason();
    failed.message = plan.status().message();
    if (auto s = publish(failed); !s.isOk()) return Result::retry(s);
    return Result::terminal(plan.status());  // the VMImage must change first
  }
  if (!options_.build_api_served) {
    // Said once on the image, where a user looks; the API's arrival starts a new term, which
    // goes over every image again.
    api::BuildArtifact waiting;
    waiting.kind = plan->kind;
    waiting.phase = "Pending";
    waiting.reason = "BuildUnavailable";
    waiting.message = kBuildUnavailableMessage;
    if (auto s = publish(waiting); !s.isOk()) return Result::retry(s);
    return Result::done();
  }

  // The Secrets the build mounts hold what it needs, before kairos is asked: a missing key
  // would otherwise fail inside kairos' build pod, where nobody looks.
  if (auto keys = secretsHoldTheirKeys(plan->secret_keys_needed, plan->overlay_secret);
      !keys.isOk()) {
    api::BuildArtifact failed;
    failed.kind = plan->kind;
    failed.phase = "Failed";
    failed.reason = keys.reason();
    failed.message = keys.message();
    if (auto s = publish(failed); !s.isOk()) return Result::retry(s);
    spdlog::warn("vmimage {}: {}", name, failed.message);
    return Result::requeueAfter(kSecretRecheck);
  }

  // The merged cloud-config, layer by layer in list order.
  if (plan->merge_cloud_config) {
    std::vector<CloudConfigLayer> layers;
    Status problem = Status::ok();
    for (size_t i = 0; i < image.spec.cloud_configs.size() && problem.isOk(); ++i) {
      const auto& source = image.spec.cloud_configs[i];
      std::string where = "cloudConfigs[" + std::to_string(i) + "]";
      if (!source.secret_ref || source.secret_ref->name.empty()) {
        problem = error(Code::kInvalidArgument, "CloudConfigInvalid",
                        where + " has no secretRef (the only source kind implemented)");
        break;
      }
      std::string key =
          source.secret_ref->key.empty() ? "cloud-config.yaml" : source.secret_ref->key;
      where += " (Secret " + options_.build_namespace + "/" + source.secret_ref->name + ", key " +
               key + ")";
      auto secret =
          client_.get(kube::resources::kSecret, options_.build_namespace, source.secret_ref->name);
      if (!secret.ok()) {
        problem = error(Code::kFailedPrecondition, "CloudConfigUnavailable",
                        where + " cannot be read: " + secret.status().message());
        break;
      }
      const auto* data = json::find(&*secret, "data");
      const rapidjson::Value* value = nullptr;
      if (data != nullptr && data->IsObject()) {
        auto it = data->FindMember(key.c_str());
        if (it != data->MemberEnd()) value = &it->value;
      }
      if (value == nullptr || !value->IsString()) {
        problem =
            error(Code::kFailedPrecondition, "CloudConfigUnavailable", where + " has no such key");
        break;
      }
      auto text = common::decodeBase64(value->GetString());
      if (!text) {
        problem = error(Code::kInvalidArgument, "CloudConfigInvalid",
                        where + ": data is not valid base64");
        break;
      }
      layers.push_back({where, std::move(*text)});
    }
    StatusOr<std::string> merged =
        problem.isOk() ? mergeCloudConfigs(layers) : StatusOr<std::string>(problem);
    if (!merged.ok()) {
      api::BuildArtifact failed;
      failed.kind = plan->kind;
      failed.phase = "Failed";
      failed.reason = merged.status().reason();
      failed.message = merged.status().message();
      if (auto s = publish(failed); !s.isOk()) return Result::retry(s);
      spdlog::warn("vmimage {}: {}", name, failed.message);
      return Result::requeueAfter(kSecretRecheck);
    }
    // Written only when its content changed: VMImage status updates from every provider
    // reconcile this image, and steady state should cost reads, not writes.
    auto existing_secret =
        client_.get(kube::resources::kSecret, options_.build_namespace, mergedSecretName(name));
    std::string wanted = common::encodeBase64(*merged);
    bool current_secret = false;
    if (existing_secret.ok()) {
      const auto* data = json::find(&*existing_secret, "data");
      if (data != nullptr && data->IsObject()) {
        auto it = data->FindMember(kMergedCloudConfigKey);
        current_secret = it != data->MemberEnd() && it->value.IsString() &&
                         wanted == it->value.GetString() &&
                         annotation(*existing_secret, kVMImageAnnotation) == name;
      }
    }
    if (!current_secret) {
      auto applied =
          client_.apply(kube::resources::kSecret, options_.build_namespace, mergedSecretName(name),
                        mergedSecretManifest(image, options_.build_namespace, *merged),
                        {.field_manager = kImageBuilderManager, .force = true});
      if (!applied.ok()) return Result::retry(applied.status());
    }
  }

  // The OSArtifact: created once per build spec; kairos refuses spec updates, so a changed
  // build replaces it.
  std::string artifact_name = osArtifactName(name);
  std::string hash = buildSpecHash(image, *plan);
  auto existing = artifacts_.get(options_.build_namespace + "/" + artifact_name);
  if (existing) {
    bool ours = annotation(*existing, kVMImageAnnotation) == name;
    std::string existing_hash = annotation(*existing, kBuildSpecHashAnnotation);
    if (!ours || existing_hash != hash) {
      if (json::stringOr(existing.get(), "metadata.deletionTimestamp").empty()) {
        kube::DeleteOptions del;
        del.propagation_policy = "Background";
        del.precondition_uid = json::stringOr(existing.get(), "metadata.uid");
        auto s = client_.remove(kOsArtifactType, options_.build_namespace, artifact_name, del);
        if (!s.isOk() && !kube::isNotFound(s)) return Result::retry(s);
        spdlog::info("vmimage {}: build spec changed, replacing OSArtifact {}/{}", name,
                     options_.build_namespace, artifact_name);
      }
      api::BuildArtifact pending;
      pending.kind = plan->kind;
      pending.phase = "Pending";
      pending.reason = "Rebuilding";
      pending.message = "the build changed; waiting for the previous OSArtifact to go";
      if (auto s = publish(pending); !s.isOk()) return Result::retry(s);
      return Result::requeueAfter(std::chrono::seconds(2));
    }
  }
  rapidjson::Document applied_doc;
  const rapidjson::Value* os_artifact = existing.get();
  if (!existing) {
    auto applied = client_.apply(
        kOsArtifactType, options_.build_namespace, artifact_name,
        osArtifactManifest(image, *plan, options_.build_namespace,
                           options_.job_image.empty() ? std::string(kDefaultOverlayCopyImage)
                                                      : options_.job_image),
        {.field_manager = kImageBuilderManager, .force = true});
    if (!applied.ok()) return Result::retry(applied.status());
    applied_doc = std::move(*applied);
    os_artifact = &applied_doc;
    spdlog::info("vmimage {}: requested {} build OSArtifact {}/{}", name, plan->kind,
                 options_.build_namespace, artifact_name);
  }

  api::BuildArtifact desired = buildArtifactFrom(*os_artifact, *plan);
  if (desired.phase == "Ready") {
    // What was built, in the pin's algorithm when there is a pin: learned once per build, from
    // the artifacts volume itself (ADR 0052), never from the build's own say-so.
    const std::string& pin = plan->source_checksum;
    const std::string algorithm = pinAlgorithm(pin);
    auto fail = [&](const Status& why) {
      desired.phase = "Failed";
      desired.reason = why.reason();
      desired.message = why.message();
      desired.checksum.clear();
      return publish(desired);
    };
    if (current && current->os_artifact_uid == desired.os_artifact_uid &&
        !current->checksum.empty() && current->phase == "Ready") {
      desired.checksum = current->checksum;  // hashed once per build
    } else if (!options_.artifacts_root.empty()) {
      auto sum =
          artifactDigest(options_.artifacts_root / desired.pvc_ref / desired.file, algorithm);
      if (!sum.ok()) {
        if (auto s = fail(sum.status()); !s.isOk()) return Result::retry(s);
        return Result::requeueAfter(kSecretRecheck);
      }
      desired.checksum = *sum;
    } else if (jobs_ != nullptr && !options_.job_image.empty()) {
      auto learned = checksumFromJob(image, desired, algorithm);
      if (!learned.failure.isOk()) {
        if (auto s = fail(learned.failure); !s.isOk()) return Result::retry(s);
        // The Job could not be made (the API server, RBAC): tried again, without a hot loop.
        if (learned.failure.code() == Code::kUnavailable) {
          return Result::requeueAfter(kSecretRecheck);
        }
        return Result::done();  // what the Job said holds for this build; a rebuild is a new Job
      }
      if (!learned.done) {
        // Not Ready until the digest is known: imports start only from a verified artifact.
        desired.phase = "Building";
        desired.reason = "Checksumming";
        desired.message = learned.progress;
        desired.file.clear();
        if (auto s = publish(desired); !s.isOk()) return Result::retry(s);
        return Result::done();  // the Job's watch brings the image back
      }
      desired.checksum = learned.checksum;
    } else {
      desired.checksum = pin;
    }
    if (auto matches = pinMatches(pin, desired.checksum); !matches.isOk()) {
      if (auto s = fail(matches); !s.isOk()) return Result::retry(s);
      spdlog::warn("vmimage {}: {}", name, matches.message());
      return Result::done();
    }
    if (desired.checksum.empty()) {
      desired.message += "; no checksum is known, so imports will refuse it (fail closed)";
    }
  }
  if (auto s = publish(desired); !s.isOk()) return Result::retry(s);
  return Result::done();
}

void wireImageBuilder(runtime::Controller& controller, runtime::Informer& images,
                      runtime::Informer& artifacts, runtime::Informer* jobs) {
  controller.watch(images);
  auto to_image = [](const runtime::Object& object) {
    std::string image = annotation(*object, kVMImageAnnotation);
    return image.empty() ? std::vector<std::string>{} : std::vector<std::string>{image};
  };
  controller.watchMapped(artifacts, to_image);
  if (jobs != nullptr) controller.watchMapped(*jobs, to_image);
}

namespace {

struct CommandOptions {
  RoleProcessOptions process;
  ImageBuilderOptions builder;
  std::string artifacts_root;
  std::string lease_namespace;
  int workers = 2;
  int api_poll_seconds = 30;
};

std::string identity() {
  const char* pod = std::getenv("POD_NAME");
  std::string base;
  if (pod != nullptr && *pod != '\0') {
    base = pod;
  } else {
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    base = host;
  }
  std::random_device rd;
  return base + "_" + std::to_string(rd());
}

int runImageBuilder(const CommandOptions& o) {
  StopSignal stop;
  auto connected = connectToApiServer(o.process);
  if (!connected.ok()) {
    spdlog::error("imagebuilder: {}", connected.status().message());
    return app::kExitFailure;
  }
  auto& client = **connected;
  ImageBuilderOptions options = o.builder;
  options.artifacts_root = o.artifacts_root;

  // One set of caches and one work queue per leadership term: a term that ended (a lost Lease)
  // shut its queue down, and the next starts from fresh caches (ADR 0021).
  struct Term {
    Term(kube::KubeClient& client, const ImageBuilderOptions& options, int workers)
        : build_api_served(options.build_api_served),
          checksum_jobs(!options.job_image.empty()),
          images(client, kVMImageType, {}),
          artifacts(client, kOsArtifactType, {.ns = options.build_namespace}),
          jobs(client, kube::resources::kJob,
               {.ns = options.build_namespace, .label_selector = checksumJobSelector()}),
          reconciler(client, images, artifacts, checksum_jobs ? &jobs : nullptr, options),
          controller("imagebuilder", reconciler, {.workers = workers}) {
      wireImageBuilder(controller, images, artifacts, checksum_jobs ? &jobs : nullptr);
    }
    bool build_api_served;
    bool checksum_jobs;
    runtime::Informer images;
    runtime::Informer artifacts;  // not run while the API is not served
    runtime::Informer jobs;       // run only with checksum Jobs (--job-image)
    ImageBuilderReconciler reconciler;
    runtime::Controller controller;
  };
  std::mutex term_mutex;
  Term* term = nullptr;

  runtime::LeaderElectionConfig election;
  election.lease_namespace = o.lease_namespace;
  election.lease_name = "banlieue-imagebuilder";
  election.identity = identity();
  std::atomic<bool> leading{false};

  runtime::HealthServer health;
  health.addReadinessCheck("leader", [&leading](std::string& reason) {
    if (leading) return true;
    reason = "not leading (standby replica)";
    return false;
  });
  health.addReadinessCheck("informers", [&](std::string& reason) {
    std::lock_guard lock(term_mutex);
    if (term != nullptr && term->images.hasSynced() &&
        (!term->build_api_served ||
         (term->artifacts.hasSynced() && (!term->checksum_jobs || term->jobs.hasSynced())))) {
      return true;  // without the OSArtifact API, the images say so: nothing to wait for here
    }
    reason = "VMImage/OSArtifact caches not synced";
    return false;
  });
  RoleEndpoints endpoints;
  if (auto s = endpoints.start(o.process, health); !s.isOk()) {
    spdlog::error("imagebuilder: {}", s.message());
    return app::kExitFailure;
  }

  // Work runs only while leading, and stops before the Lease is released; a lost Lease stops it
  // and this process campaigns again (ADR 0021): two replicas never write at once.
  runWhileLeading(
      client, election, stop,
      [&](const std::atomic<bool>& work_stop) {
        spdlog::info("imagebuilder: leading; build namespace {}", options.build_namespace);
        bool said_unavailable = false;
        while (!work_stop) {
          ImageBuilderOptions term_options = options;
          term_options.build_api_served =
              kube::discoverKind(client, "build.kairos.io/v1alpha2", "OSArtifact").ok();
          if (!term_options.build_api_served && !said_unavailable) {
            spdlog::warn(
                "imagebuilder: {}; Url VMImages say so (status.buildArtifact reason "
                "BuildUnavailable), and the API is looked for every {} s",
                kBuildUnavailableMessage, o.api_poll_seconds);
            said_unavailable = true;
          }
          Term this_term(client, term_options, o.workers);
          {
            std::lock_guard lock(term_mutex);
            term = &this_term;
          }
          // The term ends with the leadership, or when the OSArtifact API appears (a new term
          // then runs with it).
          std::atomic<bool> term_stop{false};
          std::thread watcher([&] {
            auto next_look = std::chrono::steady_clock::now();
            while (!term_stop) {
              if (work_stop) {
                term_stop = true;
                break;
              }
              if (!term_options.build_api_served && std::chrono::steady_clock::now() >= next_look) {
                next_look += std::chrono::seconds(o.api_poll_seconds);
                if (kube::discoverKind(client, "build.kairos.io/v1alpha2", "OSArtifact").ok()) {
                  spdlog::info("imagebuilder: the OSArtifact API is served now; building");
                  term_stop = true;
                  break;
                }
              }
              std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
          });
          std::thread images_thread([&] { this_term.images.run(term_stop); });
          std::thread artifacts_thread([&] {
            if (term_options.build_api_served) this_term.artifacts.run(term_stop);
          });
          std::thread jobs_thread([&] {
            if (term_options.build_api_served && this_term.checksum_jobs) {
              this_term.jobs.run(term_stop);
            }
          });
          this_term.controller.run(term_stop);
          term_stop = true;
          watcher.join();
          images_thread.join();
          artifacts_thread.join();
          jobs_thread.join();
          {
            std::lock_guard lock(term_mutex);
            term = nullptr;
          }
          if (term_options.build_api_served) break;  // the leadership ended
        }
      },
      {.leading = &leading});
  return app::kExitOk;
}

}  // namespace

void registerImageBuilderCommand(CLI::App& app, app::Action& action) {
  auto o = std::make_shared<CommandOptions>();
  const char* pod_ns = std::getenv("POD_NAMESPACE");
  o->lease_namespace = pod_ns != nullptr && *pod_ns != '\0' ? pod_ns : "banlieue-system";
  auto* sub = app.add_subcommand(
      "imagebuilder",
      "Turn Url-kind VMImages into kairos-operator OSArtifacts and mirror the build into\n"
      "VMImage.status.buildArtifact (field manager banlieue.io/imagebuilder)");
  addRoleProcessFlags(sub, &o->process);
  sub->add_option("--build-namespace", o->builder.build_namespace,
                  "Namespace of OSArtifacts, merged cloud-configs and the cloudConfigs Secrets")
      ->capture_default_str();
  sub->add_option("--artifacts-root", o->artifacts_root,
                  "Directory where the artifacts PVCs are mounted read-only (one sub-directory\n"
                  "per PVC); lets the imagebuilder record each artifact's sha256");
  sub->add_option("--job-image", o->builder.job_image,
                  "banlieue's own image, for the Jobs run in the build namespace: a checksum\n"
                  "Job per build mounts its artifacts PVC read-only and records the digest in\n"
                  "status.buildArtifact.checksum (imports verify it), and the isoOverlay copy.\n"
                  "Without it (and without --artifacts-root) only a source's checksum pin is\n"
                  "recorded");
  sub->add_option("--leader-election-namespace", o->lease_namespace,
                  "Namespace of the banlieue-imagebuilder Lease (default $POD_NAMESPACE)")
      ->capture_default_str();
  sub->add_option("--api-poll-seconds", o->api_poll_seconds,
                  "While the OSArtifact API (kairos-operator) is not served, how often to look\n"
                  "for it")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->add_option("--workers", o->workers, "Concurrent reconciles")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->callback([&action, o] { action = [o] { return runImageBuilder(*o); }; });
}

}  // namespace banlieue::roles::images
