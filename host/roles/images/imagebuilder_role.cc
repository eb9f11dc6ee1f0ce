#include "host/roles/images/imagebuilder_role.h"

#include "host/api/codec.h"
#include "host/api/vm_class.h"
#include "host/common/base64.h"
#include "host/kube/api_error.h"
#include "host/kube/discovery.h"
#include "host/roles/common/leadership.h"
#include "host/roles/common/role_process.h"
#include "host/roles/images/artifact_checksum.h"
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

// The artifact's sha256: kairos' "<file>.sha256" sidecar when present, else computed.
StatusOr<std::string> artifactSha256(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return error(Code::kNotFound, "ArtifactMissing",
                 "the build is Ready but " + file.string() + " is not on the artifacts volume");
  }
  fs::path sidecar = file;
  sidecar += ".sha256";
  if (std::ifstream in(sidecar); in) {
    std::string hex;
    in >> hex;
    if (isHex64(hex)) return "sha256:" + hex;
  }
  auto digest = fileDigest(file, "sha256");
  if (!digest.ok()) return digest.status();
  return "sha256:" + *digest;
}

}  // namespace

ImageBuilderReconciler::ImageBuilderReconciler(kube::KubeClient& client, runtime::Informer& images,
                                               runtime::Informer& artifacts,
                                               ImageBuilderOptions options)
    : client_(client), images_(images), artifacts_(artifacts), options_(std::move(options)) {}

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
    auto applied = client_.apply(kOsArtifactType, options_.build_namespace, artifact_name,
                                 osArtifactManifest(image, *plan, options_.build_namespace),
                                 {.field_manager = kImageBuilderManager, .force = true});
    if (!applied.ok()) return Result::retry(applied.status());
    applied_doc = std::move(*applied);
    os_artifact = &applied_doc;
    spdlog::info("vmimage {}: requested {} build OSArtifact {}/{}", name, plan->kind,
                 options_.build_namespace, artifact_name);
  }

  api::BuildArtifact desired = buildArtifactFrom(*os_artifact, *plan);
  if (desired.phase == "Ready") {
    if (current && current->os_artifact_uid == desired.os_artifact_uid &&
        !current->checksum.empty() && current->phase == "Ready") {
      desired.checksum = current->checksum;  // hashed once per build
    } else if (!options_.artifacts_root.empty()) {
      auto sum = artifactSha256(options_.artifacts_root / desired.pvc_ref / desired.file);
      if (!sum.ok()) {
        desired.phase = "Failed";
        desired.reason = sum.status().reason();
        desired.message = sum.status().message();
        if (auto s = publish(desired); !s.isOk()) return Result::retry(s);
        return Result::requeueAfter(kSecretRecheck);
      }
      desired.checksum = *sum;
    } else {
      desired.checksum = plan->source_checksum;
    }
    if (desired.checksum.empty()) {
      desired.message += "; no checksum is known, so imports will refuse it (fail closed)";
    }
  }
  if (auto s = publish(desired); !s.isOk()) return Result::retry(s);
  return Result::done();
}

void wireImageBuilder(runtime::Controller& controller, runtime::Informer& images,
                      runtime::Informer& artifacts) {
  controller.watch(images);
  controller.watchMapped(artifacts, [](const runtime::Object& object) {
    std::string image = annotation(*object, kVMImageAnnotation);
    return image.empty() ? std::vector<std::string>{} : std::vector<std::string>{image};
  });
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
          images(client, kVMImageType, {}),
          artifacts(client, kOsArtifactType, {.ns = options.build_namespace}),
          reconciler(client, images, artifacts, options),
          controller("imagebuilder", reconciler, {.workers = workers}) {
      wireImageBuilder(controller, images, artifacts);
    }
    bool build_api_served;
    runtime::Informer images;
    runtime::Informer artifacts;  // not run while the API is not served
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
        (!term->build_api_served || term->artifacts.hasSynced())) {
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
          this_term.controller.run(term_stop);
          term_stop = true;
          watcher.join();
          images_thread.join();
          artifacts_thread.join();
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
