#include "host/roles/images/image_import_command.h"

#include "host/api/yaml.h"
#include "host/common/logging.h"
#include "host/plugin/loader.h"
#include "host/plugin/status_policy.h"
#include "host/roles/common/role_process.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/import_exit.h"
#include "host/roles/images/import_progress.h"
#include "host/roles/images/termination_log.h"
#include "host/roles/provider/connection_inputs.h"

#include <banlieue/sdk/json.h>
#include <rapidjson/document.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

namespace banlieue::roles::images {
namespace {

namespace fs = std::filesystem;
namespace json = sdk::json;
using Clock = std::chrono::steady_clock;

const kube::ResourceType kVMImages{"banlieue.io", "v1alpha1", "vmimages", false};
const kube::ResourceType kProviders{"banlieue.io", "v1alpha1", "providers", true};

struct Options {
  RoleProcessOptions kube;
  std::string plugin_dir = plugin::kDefaultPluginRoot;
  std::string plugin_sha256;
  std::string backend;
  std::string provider;  // ns/name
  std::string provider_file;
  std::string image;
  std::string image_file;
  std::string failure_domain;
  std::string target;
  std::string artifact;
  std::string format = "raw";
  std::string checksum;
  std::string credentials_dir;
  std::string termination_log = kDefaultTerminationLog;
  int timeout_seconds = 3600;
  int call_timeout_seconds = 60;
};

// The outcome, logged and written where the Job's watcher reads it.
struct Outcome {
  int exit_code = kImportOk;
  std::string reason;
  std::string message;
  std::string resolved_ref;
};

Outcome fail(int exit_code, const Status& status) {
  return {exit_code,
          status.reason().empty() ? reasonForImportExit(exit_code) : status.reason(),
          status.message(),
          {}};
}

Outcome fail(int exit_code, std::string message) {
  return {exit_code, reasonForImportExit(exit_code), std::move(message), {}};
}

void writeOutcome(const std::string& path, const Outcome& outcome) {
  std::string json = R"({"reason":")" + common::jsonEscape(outcome.reason) + R"(","message":")" +
                     common::jsonEscape(outcome.message.substr(0, kTerminationMessageTextLimit)) +
                     R"(","exitCode":)" + std::to_string(outcome.exit_code);
  if (!outcome.resolved_ref.empty()) {
    json += R"(,"resolvedRef":")" + common::jsonEscape(outcome.resolved_ref) + '"';
  }
  writeTerminationLog(path, json + "}");
}

StatusOr<std::string> readText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return error(Code::kNotFound, "InputUnavailable", "cannot read " + file.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A JSON or YAML file holding one object, as JSON text.
StatusOr<std::string> readObjectFile(const fs::path& file) {
  auto text = readText(file);
  if (!text.ok()) return text.status();
  rapidjson::Document doc;
  if (!doc.Parse(text->data(), text->size()).HasParseError() && doc.IsObject()) return *text;
  auto docs = api::parseYamlDocuments(*text, file.string());
  if (!docs.ok()) return error(Code::kInvalidArgument, "InputUnavailable", docs.status().message());
  if (docs->size() != 1 || !(*docs)[0].IsObject()) {
    return error(Code::kInvalidArgument, "InputUnavailable",
                 file.string() + " must hold exactly one object");
  }
  return json::serialize((*docs)[0]);
}

// Files of a mounted Secret volume: one per key. The kubelet's ..data indirection and other
// dot entries are not keys.
StatusOr<std::map<std::string, std::string>> readCredentials(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    if (!fs::is_regular_file(entry.path(), ec)) continue;  // follows the key -> ..data link
    auto text = readText(entry.path());
    if (!text.ok()) return text.status();
    out[name] = std::move(*text);
  }
  if (ec) {
    return error(Code::kNotFound, "InputUnavailable",
                 "cannot list credentials directory " + dir.string() + ": " + ec.message());
  }
  return out;
}

StatusOr<std::string> getObject(kube::KubeClient& client, const kube::ResourceType& type,
                                const std::string& ns, const std::string& name) {
  auto doc = client.get(type, ns, name);
  if (!doc.ok()) return doc.status();
  return json::serialize(*doc);
}

// Logs at most every few seconds, and always at the end.
// The checksum pass's progress, as the progress line the provider reads (import_progress.h).
class ProgressLog {
 public:
  explicit ProgressLog(std::string phase) : phase_(std::move(phase)) {}
  void operator()(uint64_t done, uint64_t total) {
    auto now = Clock::now();
    if (done != total && now - last_ < std::chrono::seconds(3)) return;
    last_ = now;
    spdlog::info("{}", importProgressLine(importProgress(phase_, done, total)));
  }

 private:
  std::string phase_;
  Clock::time_point last_{};
};

Outcome runImport(const Options& o, const std::atomic<bool>& stop) {
  // 1. The checksum, before anything else: an unusable one fails closed.
  auto expected = parseChecksum(o.checksum);
  if (!expected.ok()) return fail(kImportChecksumUnusable, expected.status());
  std::error_code ec;
  if (!fs::is_regular_file(o.artifact, ec)) {
    return fail(kImportArtifactUnreadable, "artifact " + o.artifact + " is not a readable file");
  }
  uint64_t size = fs::file_size(o.artifact, ec);
  spdlog::info("verifying {} ({} bytes) against {}", o.artifact, size, expected->algorithm);
  ProgressLog verify_progress("Verifying");
  if (auto s = verifyChecksum(o.artifact, *expected, std::ref(verify_progress), &stop); !s.isOk()) {
    if (s.code() == Code::kCancelled) return fail(kImportCancelled, s);
    return fail(
        s.reason() == "ChecksumMismatch" ? kImportChecksumMismatch : kImportArtifactUnreadable, s);
  }
  // The plugin contract carries sha256; with a sha512 pin it is computed as well.
  std::string sha256 = expected->hex;
  if (expected->algorithm != "sha256") {
    auto digest = fileDigest(o.artifact, "sha256", {}, &stop);
    if (!digest.ok()) return fail(kImportArtifactUnreadable, digest.status());
    sha256 = *digest;
  }
  spdlog::info("artifact {} verified", o.artifact);

  // 2. The VMImage and the Provider.
  std::string image_json, provider_json;
  std::unique_ptr<kube::KubeClient> client;
  auto connect = [&]() -> Status {
    if (client) return Status::ok();
    auto c = connectToApiServer(o.kube);
    if (!c.ok()) return c.status();
    client = std::move(*c);
    return Status::ok();
  };
  if (!o.image_file.empty()) {
    auto text = readObjectFile(o.image_file);
    if (!text.ok()) return fail(kImportInputUnavailable, text.status());
    image_json = *text;
  } else {
    if (auto s = connect(); !s.isOk()) return fail(kImportInputUnavailable, s);
    auto text = getObject(*client, kVMImages, "", o.image);
    if (!text.ok()) return fail(kImportInputUnavailable, text.status());
    image_json = *text;
  }
  if (!o.provider_file.empty()) {
    auto text = readObjectFile(o.provider_file);
    if (!text.ok()) return fail(kImportInputUnavailable, text.status());
    provider_json = *text;
  } else {
    auto slash = o.provider.find('/');
    if (auto s = connect(); !s.isOk()) return fail(kImportInputUnavailable, s);
    auto text =
        getObject(*client, kProviders, o.provider.substr(0, slash), o.provider.substr(slash + 1));
    if (!text.ok()) return fail(kImportInputUnavailable, text.status());
    provider_json = *text;
  }
  rapidjson::Document image_doc;
  image_doc.Parse(image_json.data(), image_json.size());
  std::string image_name = json::stringOr(&image_doc, "metadata.name");
  std::string image_uid = json::stringOr(&image_doc, "metadata.uid");

  // 3. The instance config (holds secrets: never logged). Read through the API, the Provider's
  // credentials Secret and CA bundle are resolved as the provider runtime resolves them, under
  // the Job's ServiceAccount, which the operator lets `get` exactly those names (no Secret
  // copies, docs/adr/0015). --credentials-dir (a mounted Secret) serves runs by hand.
  std::string config;
  if (o.credentials_dir.empty() && o.provider_file.empty()) {
    rapidjson::Document provider_doc;
    provider_doc.Parse(provider_json.data(), provider_json.size());
    auto inputs = provider::readConnectionInputs(*client, provider_doc);
    if (!inputs.ok()) return fail(kImportInputUnavailable, inputs.status());
    config = std::move(inputs->config_json);
  } else {
    std::map<std::string, std::string> credentials;
    if (!o.credentials_dir.empty()) {
      auto read = readCredentials(o.credentials_dir);
      if (!read.ok()) return fail(kImportInputUnavailable, read.status());
      credentials = std::move(*read);
    }
    config = R"({"provider":)" + provider_json + R"(,"credentials":{)";
    bool first = true;
    for (const auto& [key, value] : credentials) {
      if (!first) config += ",";
      first = false;
      config += "\"" + common::jsonEscape(key) + "\":\"" + common::jsonEscape(value) + "\"";
    }
    config += "}}";
  }

  // 4. The plugin, under the loader's rules (plugin root, manifest first, ownership, ABI).
  plugin::LoadOptions load{.plugin_root = o.plugin_dir};
  if (!o.plugin_sha256.empty()) {
    load.expected_sha256 = o.plugin_sha256;
    load.expected_sha256_source = "the ProviderClass (--plugin-sha256)";
  }
  plugin::PluginLoader loader(load);
  auto loaded = loader.load(o.backend);
  if (!loaded.ok()) return fail(kImportPluginLoadFailed, loaded.status());
  std::shared_ptr<plugin::Plugin> plug = *loaded;
  if (plug->client().table().import_image == nullptr) {
    return fail(kImportPluginLoadFailed,
                "plugin " + o.backend + " has no import_image slot: it cannot import images");
  }
  plugin::CallOptions call;
  call.timeout = std::chrono::seconds(o.call_timeout_seconds);
  call.object_uid = image_uid;
  call.cancel = &stop;
  plugin::CallResult created;
  auto instance = plug->createInstance(config, call, created);
  if (!instance) {
    return fail(kImportConnectFailed, error(Code::kUnavailable,
                                            created.outcome.reason.empty() ? "ProviderConnectFailed"
                                                                           : created.outcome.reason,
                                            "instance_create: " + created.outcome.message));
  }

  // 5. import_image until done.
  std::string token;
  auto deadline = Clock::now() + std::chrono::seconds(o.timeout_seconds);
  std::string last_progress;
  std::string last_phase;
  auto last_log = Clock::time_point{};
  const std::string where =
      "failure domain " + o.failure_domain + (o.target.empty() ? "" : " target " + o.target);
  spdlog::info("importing {} into {} {} of Provider {}", image_name, o.backend, where,
               o.provider.empty() ? o.provider_file : o.provider);
  for (;;) {
    if (stop) return fail(kImportCancelled, "stopped before the import finished");
    if (Clock::now() > deadline) {
      return fail(kImportRetryable, error(Code::kDeadlineExceeded, "ImportTimedOut",
                                          "the import did not finish within " +
                                              std::to_string(o.timeout_seconds) + " s"));
    }
    std::string request = importImageRequest({.image_json = image_json,
                                              .artifact_path = o.artifact,
                                              .format = o.format,
                                              .sha256 = sha256,
                                              .size_bytes = size,
                                              .failure_domain = o.failure_domain,
                                              .target = o.target,
                                              .token = token});
    auto result = instance->importImage(request, call);
    for (const auto& v : result.violations) spdlog::warn("plugin contract: {}", v);
    rapidjson::Document body;
    if (!result.outcome.body.empty()) {
      body.Parse(result.outcome.body.data(), result.outcome.body.size());
    }
    if (result.ok()) {
      Outcome ok{kImportOk, "Imported", result.outcome.message, {}};
      if (!body.HasParseError() && body.IsObject()) {
        ok.resolved_ref = json::stringOr(&body, "status.resolvedRef");
      }
      if (ok.message.empty()) {
        ok.message = "imported " + image_name;
        ok.message += " into " + where;
        if (!ok.resolved_ref.empty()) ok.message += " as " + ok.resolved_ref;
      }
      return ok;
    }
    auto policy = plugin::policyFor(result.code());
    if (policy.disposition != plugin::Disposition::kPoll) {
      Status s = error(static_cast<Code>(result.code()),
                       result.outcome.reason.empty() ? "ImportFailed" : result.outcome.reason,
                       result.outcome.message);
      return fail(
          policy.disposition == plugin::Disposition::kTerminal ? kImportRejected : kImportRetryable,
          s);
    }
    if (!body.HasParseError() && body.IsObject()) {
      std::string next = json::stringOr(&body, "operation.token");
      if (!next.empty()) token = next;
      auto done = json::integer(&body, "status.progress.bytesDone");
      auto total = json::integer(&body, "status.progress.bytesTotal");
      std::string phase = json::stringOr(&body, "status.progress.phase", "Importing");
      std::string progress = importProgressLine(
          importProgress(phase, static_cast<uint64_t>(std::max<int64_t>(0, done.value_or(0))),
                         static_cast<uint64_t>(std::max<int64_t>(0, total.value_or(0)))));
      // A new phase at once (the zone row shows the last line: a short step must not be
      // skipped), byte counts of the same phase at most every 2 s.
      if (progress != last_progress &&
          (phase != last_phase || Clock::now() - last_log > std::chrono::seconds(2))) {
        spdlog::info("{}", progress);
        last_progress = progress;
        last_phase = phase;
        last_log = Clock::now();
      }
    }
    auto wait =
        plugin::clampRequeueHint(result.outcome.requeue_after_ms, std::chrono::milliseconds(1000));
    wait = std::min<std::chrono::milliseconds>(wait, std::chrono::seconds(5));
    auto until = Clock::now() + wait;
    while (!stop && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

std::string importImageRequest(const ImportRequestFields& f) {
  std::string request = R"({"image":)";
  request += f.image_json;
  request += R"(,"artifact":{"path":")";
  request += common::jsonEscape(f.artifact_path);
  request += R"(","format":")";
  request += common::jsonEscape(f.format);
  request += R"(","sha256":")";
  request += common::jsonEscape(f.sha256);
  request += R"(","sizeBytes":)";
  request += std::to_string(f.size_bytes);
  request += R"(},"failureDomain":")";
  request += common::jsonEscape(f.failure_domain);
  request += '"';
  if (!f.target.empty()) {
    request += R"(,"target":")";
    request += common::jsonEscape(f.target);
    request += '"';
  }
  if (!f.token.empty()) {
    request += R"(,"operation":{"token":")";
    request += common::jsonEscape(f.token);
    request += "\"}";
  }
  request += '}';
  return request;
}

void registerImageImportCommand(CLI::App& app, app::Action& action) {
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "image-import",
      "Verify a built artifact's checksum and import it into one failure domain of a Provider\n"
      "through its plugin (the per-zone import Job). Exit status: 0 imported, 10 checksum\n"
      "mismatch, 11 checksum unusable, 12 artifact unreadable, 13 plugin load failed,\n"
      "14 inputs unavailable, 15 provider connect failed, 16 import rejected,\n"
      "17 transient failure, 18 cancelled (docs/adr/0013).");
  sub->add_option("--kubeconfig", o->kube.kubeconfig, "Kubeconfig (default: in-cluster)");
  sub->add_option("--context", o->kube.context, "Kubeconfig context");
  sub->add_option("--plugin-dir", o->plugin_dir, "Directory holding one sub-directory per plugin")
      ->capture_default_str();
  sub->add_option("--backend", o->backend, "Plugin directory name under --plugin-dir")->required();
  sub->add_option("--plugin-sha256", o->plugin_sha256,
                  "Refuse to load a plugin library with another sha256 (the ProviderClass's "
                  "spec.plugin.sha256)");
  auto* provider = sub->add_option("--provider", o->provider, "The Provider, as namespace/name");
  auto* provider_file =
      sub->add_option("--provider-file", o->provider_file, "The Provider from a JSON/YAML file")
          ->check(CLI::ExistingFile);
  provider->excludes(provider_file);
  auto* image = sub->add_option("--image", o->image, "The VMImage's name");
  auto* image_file =
      sub->add_option("--image-file", o->image_file, "The VMImage from a JSON/YAML file")
          ->check(CLI::ExistingFile);
  image->excludes(image_file);
  sub->add_option("--failure-domain", o->failure_domain, "The zone to import into")->required();
  sub->add_option("--target", o->target,
                  "One import target of the zone (its attributes.importTargets; libvirt: a\n"
                  "storage pool): the plugin imports there only. Default: every target");
  sub->add_option("--artifact", o->artifact, "The artifact file (read-only)")->required();
  sub->add_option("--format", o->format, "raw, qcow2, iso, ova or vmdk")
      ->check(CLI::IsMember({"raw", "qcow2", "iso", "ova", "vmdk"}))
      ->capture_default_str();
  sub->add_option("--checksum", o->checksum, "sha256:<hex> or sha512:<hex> (required)");
  sub->add_option("--credentials-dir", o->credentials_dir,
                  "A mounted Secret: one file per credentials key (default: the Provider's\n"
                  "credentials Secret and CA bundle, read through the API)");
  sub->add_option("--termination-log", o->termination_log,
                  "Where the outcome is written as JSON for the Job's watcher")
      ->capture_default_str();
  sub->add_option("--timeout-seconds", o->timeout_seconds, "Bound of the whole import")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  sub->add_option("--call-timeout-seconds", o->call_timeout_seconds, "Deadline of each plugin call")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  sub->callback([&action, o] {
    action = [o] {
      if (o->provider.empty() == o->provider_file.empty() ||
          o->image.empty() == o->image_file.empty()) {
        spdlog::error(
            "image-import: give --provider or --provider-file, and --image or "
            "--image-file");
        return static_cast<int>(kImportUsage);
      }
      if (!o->provider.empty() && (o->provider.find('/') == std::string::npos ||
                                   o->provider.front() == '/' || o->provider.back() == '/')) {
        spdlog::error("image-import: --provider must be namespace/name, not '{}'", o->provider);
        return static_cast<int>(kImportUsage);
      }
      if (o->backend.find('/') != std::string::npos || o->backend == ".." || o->backend == ".") {
        spdlog::error("image-import: --backend must be a plugin directory name, not a path");
        return static_cast<int>(kImportUsage);
      }
      StopSignal stop;
      Outcome outcome = runImport(*o, stop.stopping());
      if (outcome.exit_code == kImportOk) {
        spdlog::info("image-import: {}", outcome.message);
      } else {
        spdlog::error("image-import failed ({}): {}", outcome.reason, outcome.message);
      }
      writeOutcome(o->termination_log, outcome);
      return outcome.exit_code;
    };
  });
}

}  // namespace banlieue::roles::images
