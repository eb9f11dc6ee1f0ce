#include "host/plugin/conformance.h"

#include "host/common/logging.h"
#include "host/plugin/child_process.h"
#include "host/plugin/file_checks.h"
#include "host/plugin/loader.h"
#include "host/plugin/payload_schemas.h"
#include "host/plugin/sha256.h"

#include <banlieue/sdk/json.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>

namespace banlieue::plugin {
namespace {

namespace json = sdk::json;
using namespace std::chrono_literals;

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kSkip: return "SKIP";
  }
  return "?";
}

std::optional<Verdict> verdictFrom(std::string_view s) {
  if (s == "PASS") return Verdict::kPass;
  if (s == "FAIL") return Verdict::kFail;
  if (s == "SKIP") return Verdict::kSkip;
  return std::nullopt;
}

std::string randomUid() {
  std::random_device rd;
  std::uniform_int_distribution<uint32_t> dist;
  return fmt::format("{:08x}-{:04x}-4{:03x}-8{:03x}-{:08x}{:04x}", dist(rd), dist(rd) & 0xFFFF,
                     dist(rd) & 0xFFF, dist(rd) & 0xFFF, dist(rd), dist(rd) & 0xFFFF);
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// ---- the child side -------------------------------------------------------------------

// Sends protocol lines to the parent: "B <step>" before a step, "R <json>" with a result,
// "M <json>"/"D <json>"/"L <path>" with the manifest, descriptor and library.
class Reporter {
 public:
  explicit Reporter(const LineWriter& out) : out_(out) {}
  void begin(const std::string& step) {
    open_step_ = step;
    out_.line("B " + step);
  }
  const std::string& openStep() const { return open_step_; }
  void result(const std::string& step, Verdict v, const std::string& detail) {
    out_.line(fmt::format(R"(R {{"name":"{}","verdict":"{}","detail":"{}"}})",
                          common::jsonEscape(step), verdictName(v), common::jsonEscape(detail)));
    if (v == Verdict::kFail) failed_ = true;
    open_step_.clear();
  }
  void pass(const std::string& step, const std::string& detail = {}) {
    result(step, Verdict::kPass, detail);
  }
  void fail(const std::string& step, const std::string& detail) {
    result(step, Verdict::kFail, detail);
  }
  void skip(const std::string& step, const std::string& detail) {
    result(step, Verdict::kSkip, detail);
  }
  void raw(char tag, std::string_view payload) {
    out_.line(std::string(1, tag) + " " + std::string(payload));
  }
  bool failed() const { return failed_; }

 private:
  const LineWriter& out_;
  bool failed_ = false;
  std::string open_step_;
};

std::string outcomeText(const CallResult& r) {
  std::string text = r.outcome.codeName();
  if (!r.outcome.reason.empty()) text += " " + r.outcome.reason;
  if (!r.outcome.message.empty()) text += ": " + r.outcome.message;
  return text;
}

// Contract problems common to every call; empty when the call behaved.
std::string contractProblems(const CallResult& r) {
  std::string problems;
  for (const auto& v : r.violations) problems += (problems.empty() ? "" : "; ") + v;
  return problems;
}

struct Sample {
  std::string kind;
  std::string object_json;
  std::string uid;
};

std::string validateRequest(const std::string& object_json) {
  return R"({"operation":"CREATE","object":)" + object_json + "}";
}

class CheckRun {
 public:
  CheckRun(const CheckOptions& options, Reporter& reporter) : o_(options), r_(reporter) {}

  // A checker step that throws (a sample that is not JSON, a reply that cannot be parsed)
  // fails the step it happened in instead of ending the check without a word.
  void run(bool full) {
    try {
      runSteps(full);
    } catch (const std::exception& e) {
      std::string step = r_.openStep().empty() ? "checker" : r_.openStep();
      r_.fail(step, std::string("check aborted: ") + e.what());
    }
  }

 private:
  void runSteps(bool full) {
    if (!loadPlugin()) return;
    if (!describe() || !full) return;
    validateSamples();
    if (!createInstance()) return;
    introspect();
    for (const auto& sample : samples_) {
      finalizeNeverReconciled(sample);
      reconcileAndFinalize(sample);
      staleOperationToken(sample);
    }
    unknownKind();
    importImage();
    r_.begin("instance_destroy");
    instance_.reset();
    r_.pass("instance_destroy", "returned");
  }

  CallOptions callOptions(const std::string& uid = {}) const {
    CallOptions c;
    c.timeout = o_.deadline;
    c.object_uid = uid;
    return c;
  }

  // Fails the step when the call broke the contract; returns false then.
  bool wellFormed(const std::string& step, const CallResult& result) {
    std::string problems = contractProblems(result);
    if (!problems.empty()) {
      r_.fail(step, problems);
      return false;
    }
    // INTERNAL (an exception the SDK caught, or a plugin bug) and UNKNOWN are never a
    // legitimate answer: a backend failure has a specific code.
    if (result.code() == BANLIEUE_INTERNAL || result.code() == BANLIEUE_UNKNOWN) {
      r_.fail(step, "plugin bug: " + outcomeText(result));
      return false;
    }
    return true;
  }

  bool bodyMatches(const std::string& step, std::string_view schema, const CallResult& result) {
    auto st = validatePayload(schema, result.outcome.body.empty() ? "{}" : result.outcome.body);
    if (st.isOk()) return true;
    r_.fail(step, "reply body: " + st.message());
    return false;
  }

  bool loadPlugin() {
    r_.begin("manifest");
    auto manifest = readManifest(o_.directory);
    if (!manifest.ok()) {
      r_.fail("manifest", manifest.status().message());
      return false;
    }
    manifest_ = manifest.value();
    if (auto st = checkAbiCompatibility(manifest_, BANLIEUE_ABI_MAJOR, BANLIEUE_ABI_MINOR);
        !st.isOk()) {
      r_.fail("manifest", st.message());
      return false;
    }
    r_.raw('M', json::serialize(json::parse(manifest_.raw_json, "manifest")));
    std::string kinds;
    for (const auto& gvk : manifest_.infrastructure)
      kinds += (kinds.empty() ? "" : ", ") + gvk.kind;
    r_.pass("manifest", fmt::format("{} {} needs ABI {}.{} (host {}.{}); serves {}", manifest_.name,
                                    manifest_.provider_version, manifest_.abi_major,
                                    manifest_.abi_minor_required, BANLIEUE_ABI_MAJOR,
                                    BANLIEUE_ABI_MINOR, kinds.empty() ? "no kinds" : kinds));
    r_.begin("load");
    LoadOptions load;
    load.plugin_root = manifest_.directory.parent_path();  // the operator named this directory
    load.expected_sha256 = o_.expected_sha256;
    auto plugin = PluginLoader(load).loadDirectory(manifest_.directory);
    if (!plugin.ok()) {
      r_.fail("load", plugin.status().message());
      return false;
    }
    plugin_ = plugin.value();
    r_.raw('L', manifest_.libraryPath().string());
    const auto& h = plugin_->client().table().header;
    r_.pass("load", fmt::format("{} exports banlieue_provider_v1_init; table ABI {}.{}, {} bytes, "
                                "magic and layout fingerprint match{}",
                                manifest_.library, h.abi_major, h.abi_minor, h.struct_size,
                                manifest_.sha256 ? ", sha256 pin verified" : ""));
    return true;
  }

  bool describe() {
    r_.begin("describe");
    auto result = plugin_->describe(callOptions());
    if (!wellFormed("describe", result)) return false;
    if (!result.ok()) {
      r_.fail("describe", "must succeed without an instance, got " + outcomeText(result));
      return false;
    }
    if (!bodyMatches("describe", "describe.response", result)) return false;
    auto doc = json::parse(result.outcome.body, "describe reply");
    r_.raw('D', json::serialize(doc));  // one line, whatever the plugin's formatting
    if (json::stringOr(&doc, "name") != manifest_.name) {
      r_.fail("describe", "describe names the plugin '" + json::stringOr(&doc, "name") +
                              "' but provider.json says '" + manifest_.name + "'");
      return false;
    }
    std::vector<GroupVersionKind> served;
    for (const auto& k : doc["kinds"].GetArray()) {
      served.push_back(
          {json::stringOr(&k, "group"), json::stringOr(&k, "version"), json::stringOr(&k, "kind")});
    }
    for (const auto& gvk : manifest_.infrastructure) {
      if (std::find(served.begin(), served.end(), gvk) == served.end()) {
        r_.fail("describe", "provider.json lists " + gvk.str() + " but describe does not serve it");
        return false;
      }
    }
    for (const auto& gvk : served) {
      if (std::find(manifest_.infrastructure.begin(), manifest_.infrastructure.end(), gvk) ==
          manifest_.infrastructure.end()) {
        r_.fail("describe", "describe serves " + gvk.str() + " which provider.json does not list");
        return false;
      }
      samples_.push_back(sampleFor(gvk));
    }
    offers_introspect_ = json::boolean(&doc, "operations.introspect", false);
    offers_import_ = json::boolean(&doc, "operations.importImage", false);
    r_.pass("describe",
            fmt::format("{} kind(s), introspect {}, importImage {}", served.size(),
                        offers_introspect_ ? "yes" : "no", offers_import_ ? "yes" : "no"));
    return true;
  }

  Sample sampleFor(const GroupVersionKind& gvk) {
    rapidjson::Document doc;
    auto path = manifest_.samples.find(gvk.kind);
    if (path != manifest_.samples.end()) {
      std::error_code ec;
      auto file = std::filesystem::canonical(manifest_.directory / path->second, ec);
      if (ec || !isInside(file, manifest_.directory)) {
        throw sdk::Error(Code::kInvalidArgument, "InvalidSample",
                         "sample " + path->second + " is missing or outside the plugin directory");
      }
      doc = json::parse(readFile(file), path->second);
    } else {
      doc.SetObject();
    }
    auto& a = doc.GetAllocator();
    auto set = [&](rapidjson::Value& obj, const char* key, rapidjson::Value value) {
      if (obj.HasMember(key)) return;
      obj.AddMember(rapidjson::StringRef(key), value, a);
    };
    set(doc, "apiVersion", json::stringValue(gvk.group + "/" + gvk.version, a));
    set(doc, "kind", json::stringValue(gvk.kind, a));
    set(doc, "metadata", rapidjson::Value(rapidjson::kObjectType));
    set(doc, "spec", rapidjson::Value(rapidjson::kObjectType));
    auto& meta = doc["metadata"];
    set(meta, "name", json::stringValue("banlieue-plugin-check", a));
    set(meta, "namespace", json::stringValue("default", a));
    set(meta, "uid", json::stringValue(randomUid(), a));
    set(meta, "generation", rapidjson::Value(1));
    return {gvk.kind, json::serialize(doc), json::stringOr(&doc, "metadata.uid")};
  }

  void validateSamples() {
    for (const auto& sample : samples_) {
      std::string step = "validate " + sample.kind;
      r_.begin(step);
      auto result =
          plugin_->validate(sample.kind, validateRequest(sample.object_json), callOptions());
      if (!wellFormed(step, result)) continue;
      if (result.code() == BANLIEUE_OK) {
        if (bodyMatches(step, "validate.response", result)) r_.pass(step, "sample accepted");
      } else if (result.code() == BANLIEUE_INVALID_ARGUMENT ||
                 result.code() == BANLIEUE_UNIMPLEMENTED) {
        r_.pass(step, "sample rejected: " + outcomeText(result));
      } else {
        r_.fail(step, "validate must answer OK or INVALID_ARGUMENT without I/O, got " +
                          outcomeText(result));
      }
    }
    std::string step = "validate malformed JSON";
    r_.begin(step);
    auto result = plugin_->validate(samples_.empty() ? "Unknown" : samples_[0].kind,
                                    "{\"object\": {\"metadata\": [", callOptions());
    if (!wellFormed(step, result)) return;
    if (result.code() == BANLIEUE_INVALID_ARGUMENT || result.code() == BANLIEUE_UNIMPLEMENTED) {
      r_.pass(step, outcomeText(result));
    } else {
      r_.fail(step, "expected INVALID_ARGUMENT for malformed JSON, got " + outcomeText(result));
    }
  }

  std::string instanceConfig() {
    if (o_.config_file) return readFile(*o_.config_file);
    return fmt::format(R"({{"provider":{{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",)"
                       R"("metadata":{{"name":"plugin-check","namespace":"default","uid":"{}"}},)"
                       R"("spec":{{"providerClassRef":{{"name":"{}"}},)"
                       R"("connection":{{"endpoint":"unconfigured://banlieue-plugin-check"}}}}}},)"
                       R"("credentials":{{}}}})",
                       randomUid(), manifest_.name);
  }

  bool createInstance() {
    const std::string step = "instance_create";
    r_.begin(step);
    std::string config = instanceConfig();
    if (auto st = validatePayload("instance_create.request", config); !st.isOk()) {
      r_.fail(step, "--config: " + st.message());
      return false;
    }
    auto parsed_config = json::parse(config, "instance config");
    provider_json_ = json::serialize(*json::member(&parsed_config, "provider"));
    CallResult result;
    instance_ = plugin_->createInstance(config, callOptions(), result);
    if (!wellFormed(step, result)) return false;
    if (instance_) {
      r_.pass(step, o_.config_file ? "connected with --config" : "created with the sample config");
      return true;
    }
    r_.skip(step,
            "no instance (" + outcomeText(result) +
                "); pass --config with a reachable Provider to exercise introspect, reconcile, "
                "finalize and import_image");
    return false;
  }

  void introspect() {
    const std::string step = "introspect";
    r_.begin(step);
    auto result = instance_->introspect(R"({"provider":)" + provider_json_ + "}", callOptions());
    if (!wellFormed(step, result)) return;
    if (result.ok()) {
      if (!bodyMatches(step, "introspect.response", result)) return;
      auto doc = json::parse(result.outcome.body, "introspect reply");
      for (const auto& fd : doc["failureDomains"].GetArray()) {
        failure_domains_.push_back(json::stringOr(&fd, "name"));
      }
      r_.pass(step, fmt::format("{} failure domain(s)", failure_domains_.size()));
    } else if (result.code() == BANLIEUE_UNIMPLEMENTED && !offers_introspect_) {
      r_.pass(step, "not offered (describe says so)");
    } else {
      r_.fail(step, outcomeText(result));
    }
  }

  // Drives one slot until it stops answering IN_PROGRESS; fails the step on a contract breach.
  std::optional<CallResult> drive(
      const std::string& step, const std::string& uid,
      const std::function<CallResult(const std::string& request_extra)>& call) {
    std::string token;
    for (int attempt = 0; attempt < 60; ++attempt) {
      r_.begin(step);
      auto result =
          call(token.empty() ? std::string()
                             : R"(,"operation":{"token":")" + common::jsonEscape(token) + "\"}");
      if (!wellFormed(step, result)) return std::nullopt;
      if (result.code() != BANLIEUE_IN_PROGRESS) return result;
      auto body = json::parse(result.outcome.body.empty() ? "{}" : result.outcome.body, "reply");
      token = json::stringOr(&body, "operation.token");
      if (token.empty()) {
        r_.fail(step, "IN_PROGRESS without operation.token in the reply body");
        return std::nullopt;
      }
      auto wait = std::clamp<int64_t>(result.outcome.requeue_after_ms, 10, 2000);
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    }
    r_.fail(step, "still IN_PROGRESS after 60 polls");
    return std::nullopt;
  }

  void reconcileAndFinalize(const Sample& sample) {
    auto object = json::parse(sample.object_json, "sample");
    std::string uid = json::stringOr(&object, "metadata.uid");
    auto request = [&](const std::string& extra) {
      return R"({"object":)" + sample.object_json + extra + "}";
    };

    std::string step = "reconcile " + sample.kind;
    auto reconciled = drive(step, uid, [&](const std::string& extra) {
      return instance_->reconcile(sample.kind, request(extra), callOptions(uid));
    });
    if (reconciled) {
      plain_reconcile_code_[sample.kind] = reconciled->code();
      if (reconciled->ok()) {
        if (bodyMatches(step, "reconcile.response", *reconciled)) r_.pass(step, "OK");
      } else {
        r_.pass(step, "well-formed error: " + outcomeText(*reconciled));
      }
    }
    for (const char* round : {"", " again"}) {
      step = "finalize " + sample.kind + round;
      auto finalized = drive(step, uid, [&](const std::string& extra) {
        return instance_->finalize(sample.kind, request(extra), callOptions(uid));
      });
      if (!finalized) continue;
      if (finalized->ok()) {
        if (bodyMatches(step, "reconcile.response", *finalized)) {
          r_.pass(step, *round ? "idempotent" : "OK");
        }
      } else if (finalized->code() == BANLIEUE_UNIMPLEMENTED) {
        r_.fail(step, "every served kind needs finalize (the host's finalizer waits for it)");
      } else {
        r_.fail(step, std::string("finalize must succeed") +
                          (*round ? " when the object is already gone" : "") + ", got " +
                          outcomeText(*finalized));
      }
    }
  }

  // The same sample under a fresh uid, so steps do not see each other's backend objects.
  Sample withFreshUid(const Sample& sample) {
    auto object = json::parse(sample.object_json, "sample");
    auto& a = object.GetAllocator();
    std::string uid = randomUid();
    object["metadata"]["uid"] = json::stringValue(uid, a);
    return {sample.kind, json::serialize(object), uid};
  }

  // finalize must succeed for an object whose reconcile never ran (deleted before scheduling).
  void finalizeNeverReconciled(const Sample& sample) {
    Sample fresh = withFreshUid(sample);
    const std::string& uid = fresh.uid;
    std::string step = "finalize " + sample.kind + " never reconciled";
    auto result = drive(step, uid, [&](const std::string& extra) {
      return instance_->finalize(sample.kind, R"({"object":)" + fresh.object_json + extra + "}",
                                 callOptions(uid));
    });
    if (!result) return;
    if (result->ok()) {
      r_.pass(step, "OK");
    } else {
      r_.fail(step,
              "finalize must succeed when nothing was ever created, got " + outcomeText(*result));
    }
  }

  // A token from a previous process: the plugin either re-derives state (OK / IN_PROGRESS) or
  // says NOT_FOUND with reason OperationUnknown so the host drops the token.
  void staleOperationToken(const Sample& sample) {
    Sample fresh = withFreshUid(sample);
    const std::string& uid = fresh.uid;
    std::string step = "reconcile " + sample.kind + " stale token";
    r_.begin(step);
    auto result =
        instance_->reconcile(sample.kind,
                             R"({"object":)" + fresh.object_json +
                                 R"(,"operation":{"token":"banlieue-plugin-check-stale"}})",
                             callOptions(uid));
    if (!wellFormed(step, result)) return;
    auto plain = plain_reconcile_code_.find(sample.kind);
    bool same_as_first_call =
        plain != plain_reconcile_code_.end() && plain->second == result.code();
    if (result.code() == BANLIEUE_OK || result.code() == BANLIEUE_IN_PROGRESS ||
        same_as_first_call) {
      r_.pass(step, "treated as a first call: " + outcomeText(result));
    } else {
      r_.fail(step,
              "an operation token the plugin does not know must be treated as absent (re-derive "
              "the state from the backend), got " +
                  outcomeText(result));
    }
    // Clean up whatever the call may have started.
    r_.begin(step + " cleanup");
    (void)drive(step + " cleanup", uid, [&](const std::string& extra) {
      return instance_->finalize(sample.kind, R"({"object":)" + fresh.object_json + extra + "}",
                                 callOptions(uid));
    });
  }

  void unknownKind() {
    const std::string step = "reconcile unknown kind";
    r_.begin(step);
    std::string uid = randomUid();
    auto result = instance_->reconcile(
        "BanlieueNoSuchKind",
        R"({"object":{"apiVersion":"example.invalid/v1","kind":"BanlieueNoSuchKind","metadata":{"name":"x","uid":")" +
            uid + R"("}}})",
        callOptions(uid));
    if (!wellFormed(step, result)) return;
    if (result.code() == BANLIEUE_INVALID_ARGUMENT || result.code() == BANLIEUE_UNIMPLEMENTED ||
        result.code() == BANLIEUE_NOT_FOUND) {
      r_.pass(step, outcomeText(result));
    } else {
      r_.fail(
          step,
          "expected INVALID_ARGUMENT or UNIMPLEMENTED for a kind the plugin does not serve, got " +
              outcomeText(result));
    }
  }

  void importImage() {
    const std::string step = "import_image";
    if (!offers_import_) {
      r_.begin(step);
      auto result = instance_->importImage("{}", callOptions());
      if (!wellFormed(step, result)) return;
      if (result.code() == BANLIEUE_UNIMPLEMENTED || result.code() == BANLIEUE_INVALID_ARGUMENT) {
        r_.pass(step, "not offered: " + outcomeText(result));
      } else {
        r_.fail(step, "describe says importImage is not offered, but import_image answered " +
                          outcomeText(result));
      }
      return;
    }
    auto dir = std::filesystem::temp_directory_path() / ("banlieue-plugin-check-" + randomUid());
    std::filesystem::create_directories(dir);
    auto artifact = dir / "disk.raw";
    {
      std::ofstream out(artifact, std::ios::binary);
      std::string block(size_t{64} * 1024, '\0');
      for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 31);
      out << block;
    }
    auto digest = sha256File(artifact);
    std::string uid = randomUid();
    std::string fd = failure_domains_.empty() ? "default" : failure_domains_.front();
    auto request = [&](const std::string& extra) {
      return fmt::format(
          R"({{"image":{{"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{{"name":"banlieue-plugin-check","uid":"{}"}},"spec":{{}}}},)"
          R"("artifact":{{"path":"{}","format":"raw","sha256":"{}","sizeBytes":{}}},"failureDomain":"{}"{}}})",
          uid, common::jsonEscape(artifact.string()), digest.ok() ? *digest : "", 64 * 1024,
          common::jsonEscape(fd), extra);
    };
    auto result = drive(step, uid, [&](const std::string& extra) {
      return instance_->importImage(request(extra), callOptions(uid));
    });
    if (result) {
      if (result->ok()) {
        if (bodyMatches(step, "reconcile.response", *result)) r_.pass(step, "imported into " + fd);
      } else {
        r_.pass(step, "well-formed error: " + outcomeText(*result));
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  const CheckOptions& o_;
  Reporter& r_;
  Manifest manifest_;
  std::shared_ptr<Plugin> plugin_;
  std::unique_ptr<PluginInstance> instance_;
  std::vector<Sample> samples_;
  std::vector<std::string> failure_domains_;
  std::string provider_json_;
  std::map<std::string, banlieue_status> plain_reconcile_code_;  // per kind
  bool offers_introspect_ = true;
  bool offers_import_ = false;
};

// ---- the parent side ------------------------------------------------------------------

CheckReport runInChild(const CheckOptions& options, bool full) {
  CheckReport report;
  report.directory = options.directory;
  std::string current_step;
  auto step_budget = options.deadline + options.grace;
  auto exit = runForked(
      [&](const LineWriter& out) {
        Reporter reporter(out);
        CheckRun(options, reporter).run(full);
        return reporter.failed() ? 1 : 0;
      },
      [&](std::string_view line) -> std::chrono::milliseconds {
        if (line.size() < 2) return step_budget;
        std::string_view payload = line.substr(2);
        switch (line[0]) {
          case 'B': current_step = std::string(payload); break;
          case 'M': report.manifest_json = std::string(payload); break;
          case 'D': report.descriptor_json = std::string(payload); break;
          case 'L': report.library = std::string(payload); break;
          case 'R': {
            rapidjson::Document doc;
            doc.Parse(payload.data(), payload.size());
            if (!doc.HasParseError()) {
              report.steps.push_back(
                  {json::stringOr(&doc, "name"),
                   verdictFrom(json::stringOr(&doc, "verdict")).value_or(Verdict::kFail),
                   json::stringOr(&doc, "detail")});
            }
            current_step.clear();
            break;
          }
          default: break;
        }
        return step_budget;
      },
      step_budget);
  std::string where = current_step.empty() ? "between steps" : "during '" + current_step + "'";
  if (exit.spawn_errno != 0) {
    report.steps.push_back(
        {"checker", Verdict::kFail,
         std::string("could not start the check process: ") + std::strerror(exit.spawn_errno)});
  } else if (exit.timed_out) {
    bool slot_call = current_step != "manifest" && current_step != "load" && !current_step.empty();
    report.steps.push_back(
        {current_step.empty() ? "watchdog" : current_step, Verdict::kFail,
         slot_call
             ? fmt::format("did not return within its {} ms deadline (+{} ms grace); the plugin "
                           "ignores cancellation, so the checker killed it",
                           options.deadline.count(), options.grace.count())
             : fmt::format("hung for more than {} ms ({}); the checker killed it",
                           (options.deadline + options.grace).count(),
                           current_step == "load" ? "loading or initialising the plugin"
                                                  : "between steps")});
  } else if (exit.signal != 0) {
    report.steps.push_back({current_step.empty() ? "crash" : current_step, Verdict::kFail,
                            "the plugin crashed with " + signalName(exit.signal) + " " + where});
  } else if (exit.exit_code != 0 && (!current_step.empty() || report.count(Verdict::kFail) == 0)) {
    report.steps.push_back({current_step.empty() ? "exit" : current_step, Verdict::kFail,
                            fmt::format("the plugin ended the check process with exit code {} {} "
                                        "(exit() called, or a crash caught by a sanitizer)",
                                        exit.exit_code, where)});
  }
  return report;
}

}  // namespace

int CheckReport::count(Verdict v) const {
  int n = 0;
  for (const auto& s : steps) n += s.verdict == v ? 1 : 0;
  return n;
}

CheckReport checkPlugin(const CheckOptions& options) {
  return runInChild(options, true);
}
CheckReport inspectPlugin(const CheckOptions& options) {
  return runInChild(options, false);
}

std::string renderText(const CheckReport& report) {
  std::string out = fmt::format("plugin check {}\n", report.directory.string());
  for (const auto& step : report.steps) {
    out += fmt::format("  {}  {:<38} {}\n", verdictName(step.verdict), step.name, step.detail);
  }
  out += fmt::format("result: {} ({} passed, {} failed, {} skipped)\n",
                     report.passed() ? "PASS" : "FAIL", report.count(Verdict::kPass),
                     report.count(Verdict::kFail), report.count(Verdict::kSkip));
  return out;
}

std::string renderJson(const CheckReport& report) {
  std::string steps;
  for (const auto& s : report.steps) {
    steps += fmt::format(R"({}{{"name":"{}","verdict":"{}","detail":"{}"}})",
                         steps.empty() ? "" : ",", common::jsonEscape(s.name),
                         verdictName(s.verdict), common::jsonEscape(s.detail));
  }
  return fmt::format(
      R"({{"directory":"{}","library":"{}","passed":{},"manifest":{},"descriptor":{},"steps":[{}]}})",
      common::jsonEscape(report.directory.string()), common::jsonEscape(report.library),
      report.passed() ? "true" : "false",
      report.manifest_json.empty() ? "null" : report.manifest_json,
      report.descriptor_json.empty() ? "null" : report.descriptor_json, steps);
}

}  // namespace banlieue::plugin
