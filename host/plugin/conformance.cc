#include "host/plugin/conformance.h"

#include "host/common/logging.h"
#include "host/plugin/child_process.h"
#include "host/plugin/elf_exports.h"
#include "host/plugin/file_checks.h"
#include "host/plugin/loader.h"
#include "host/plugin/payload_schemas.h"
#include "host/plugin/sha256.h"

#include <banlieue/sdk/json.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
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
// "E <step>" after a step repeated quietly in a fresh process, "P <step>" for each step the
// check plans after describe, "U <kind> <uid>" with the uid of each kind's sample (a fresh
// process reuses it), "F <name>" for each failure domain introspect found, "W <ms>" before
// waiting that long to poll again, and
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
    if (quiet_) {
      if (v == Verdict::kFail) quiet_failure_ = detail;
      out_.line("E " + step);
    } else {
      out_.line(fmt::format(R"(R {{"name":"{}","verdict":"{}","detail":"{}"}})",
                            common::jsonEscape(step), verdictName(v), common::jsonEscape(detail)));
      if (v == Verdict::kFail) failed_ = true;
    }
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
  void plan(const std::string& step) { out_.line("P " + step); }
  void sampleUid(const std::string& kind, const std::string& uid) {
    out_.line("U " + kind + " " + uid);
  }
  void waiting(std::chrono::milliseconds wait) { out_.line(fmt::format("W {}", wait.count())); }
  void raw(char tag, std::string_view payload) {
    if (!quiet_) out_.line(std::string(1, tag) + " " + std::string(payload));
  }
  bool failed() const { return failed_; }
  // While quiet, results are not reported: a fresh process repeats steps an earlier process
  // already reported, only to get back the state later steps need.
  void setQuiet(bool quiet) {
    quiet_ = quiet;
    quiet_failure_.clear();
  }
  const std::string& quietFailure() const { return quiet_failure_; }

 private:
  const LineWriter& out_;
  bool failed_ = false;
  bool quiet_ = false;
  std::string open_step_;
  std::string quiet_failure_;
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

// Results of steps an earlier child process reported, by step name.
using DoneSteps = std::map<std::string, Verdict>;

// What a fresh child process needs from the ones before it.
struct Resume {
  DoneSteps done;
  std::map<std::string, std::string> sample_uids;  // kind -> uid, so objects stay the same
  std::vector<std::string> failure_domains;        // what introspect found
};

// The steps every later step needs; a crash or hang in one of them ends the check.
bool isFoundationStep(const std::string& step) {
  return step == "manifest" || step == "load" || step == "describe";
}

// What a reconcile reply says about the backend object, to tell progress from standing still.
struct ObjectProgress {
  std::string status_json = "{}";  // the object's status as the host would have applied it
  std::string provider_id;
  bool provisioned = false;

  bool finished() const { return !provider_id.empty() && provisioned; }
  std::string summary() const {
    return fmt::format("providerID {}, provisioned {}", provider_id.empty() ? "unset" : provider_id,
                       provisioned ? "true" : "false");
  }
  // Applies the reply's status fields (each replaces the stored one, like the host's apply).
  void apply(const rapidjson::Value* reply_status) {
    if (reply_status == nullptr || !reply_status->IsObject()) return;
    auto status = json::parse(status_json, "status");
    auto& a = status.GetAllocator();
    for (const auto& field : reply_status->GetObject()) {
      rapidjson::Value value(field.value, a);
      if (status.HasMember(field.name)) {
        status[field.name] = value;
      } else {
        status.AddMember(rapidjson::Value(field.name, a), value, a);
      }
    }
    status_json = json::serialize(status);
    provider_id = json::stringOr(&status, "providerID");
    provisioned = json::boolean(&status, "initialization.provisioned", false);
  }
};

// The sample object with `status` set, as the host sends an object it has reconciled before.
std::string withStatus(const Sample& sample, const std::string& status_json) {
  auto object = json::parse(sample.object_json, "sample");
  auto status = json::parse(status_json, "status");
  rapidjson::Value copy(status, object.GetAllocator());
  if (object.HasMember("status")) {
    object["status"] = copy;
  } else {
    object.AddMember("status", copy, object.GetAllocator());
  }
  return json::serialize(object);
}

class CheckRun {
 public:
  CheckRun(const CheckOptions& options, Reporter& reporter, const Resume& resume)
      : o_(options),
        r_(reporter),
        done_(resume.done),
        sample_uids_(resume.sample_uids),
        failure_domains_(resume.failure_domains) {}

  // A checker step that throws (a sample that is not JSON, a reply that cannot be parsed)
  // fails the step it happened in instead of ending the check without a word.
  void run(bool full) {
    try {
      runSteps(full);
    } catch (const std::exception& e) {
      std::string step = r_.openStep().empty() ? "checker" : r_.openStep();
      r_.setQuiet(false);
      r_.fail(step, std::string("check aborted: ") + e.what());
    }
  }

 private:
  bool pending(const std::string& step) const { return done_.count(step) == 0; }

  // Runs a step every later step depends on. In a fresh process after a crash it repeats,
  // without reporting, what the first process already reported.
  bool foundation(const std::string& step, const std::function<bool()>& body) {
    bool repeat = !pending(step);
    r_.setQuiet(repeat);
    bool ok = body();
    std::string why = r_.quietFailure();
    r_.setQuiet(false);
    if (!ok && repeat) {
      r_.fail("restart", "a fresh process could not repeat '" + step + "': " + why);
    }
    return ok;
  }

  void runSteps(bool full) {
    if (!foundation("manifest", [this] { return loadManifest(); })) return;
    if (!foundation("load", [this] { return loadPlugin(); })) return;
    if (!foundation("describe", [this] { return describe(); }) || !full) return;
    if (pending("exports")) exportedSymbolsStep();
    if (pending("slots")) claimedSlots();
    for (const auto& step : plannedSteps()) r_.plan(step);

    for (const auto& sample : samples_) validateSample(sample);
    validateMalformed();
    if (pending("instance_create")) {
      createInstance();
    } else if (done_.at("instance_create") == Verdict::kPass) {
      instance_retry_ = true;  // made again on first use by a later step
    } else if (done_.at("instance_create") == Verdict::kSkip) {
      no_instance_ = "no instance (instance_create was skipped; pass --config)";
    } else {
      no_instance_ = "instance_create failed";
    }
    introspect();
    watchChanges();
    for (const auto& sample : samples_) {
      finalizeNeverReconciled(sample);
      reconcileSample(sample);
      if (o_.strict()) reconcileAgain(sample);
      snapshotSample(sample);
      consoleSample(sample);
      finalizeSample(sample);
      staleOperationToken(sample);
    }
    unknownKind();
    importImage();
    deleteImage();
    const std::string step = "instance_destroy";
    if (!pending(step)) {
      r_.setQuiet(true);  // an instance this process made again goes quietly
      r_.begin(step);
      instance_.reset();
      r_.pass(step);
      r_.setQuiet(false);
    } else if (haveInstance(step)) {
      r_.begin(step);
      instance_.reset();
      r_.pass(step, "returned");
    }
  }

  // Every step after describe, in order; the parent lists any that never reported.
  std::vector<std::string> plannedSteps() const {
    std::vector<std::string> steps;
    for (const auto& sample : samples_) steps.push_back("validate " + sample.kind);
    steps.push_back("validate malformed JSON");
    steps.push_back("instance_create");
    steps.push_back("introspect");
    steps.push_back("watch_changes");
    for (const auto& sample : samples_) {
      steps.push_back("finalize " + sample.kind + " never reconciled");
      steps.push_back("reconcile " + sample.kind);
      if (o_.strict()) steps.push_back("reconcile " + sample.kind + " again");
      steps.push_back("snapshot " + sample.kind);
      steps.push_back("console " + sample.kind);
      steps.push_back("finalize " + sample.kind);
      steps.push_back("finalize " + sample.kind + " again");
      steps.push_back("reconcile " + sample.kind + " stale token");
    }
    steps.push_back("reconcile unknown kind");
    steps.push_back("import_image");
    steps.push_back("delete_image");
    steps.push_back("instance_destroy");
    return steps;
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

  // True when describe claims `operation` ("reconcile", "finalize", "validate") for `kind`.
  bool claims(const std::string& kind, const std::string& operation) const {
    auto it = claimed_.find(kind);
    return it != claimed_.end() && it->second.count(operation) != 0;
  }

  // The table's slot for a claimable operation; NULL when the plugin left it out.
  bool slotPresent(const std::string& operation) const {
    const auto& t = plugin_->client().table();
    if (operation == "reconcile") return t.reconcile != nullptr;
    if (operation == "finalize") return t.finalize != nullptr;
    if (operation == "validate") return t.validate != nullptr;
    if (operation == "introspect") return t.introspect != nullptr;
    if (operation == "import_image") return t.import_image != nullptr;
    if (operation == "delete_image") return t.delete_image != nullptr;
    if (operation == "snapshot") return t.snapshot != nullptr;
    if (operation == "console") return plugin_->client().offersConsole();
    if (operation == "watch_changes") return t.watch_changes != nullptr;
    if (operation == "instance_create") return t.instance_create != nullptr;
    if (operation == "instance_destroy") return t.instance_destroy != nullptr;
    return false;
  }

  // Fails `step` when an UNIMPLEMENTED answer contradicts describe: always for a claimed slot
  // that is NULL, and in strict mode for any claimed slot. Returns true when it failed.
  bool unimplementedButClaimed(const std::string& step, const std::string& what,
                               const std::string& slot, const CallResult& result) {
    if (result.code() != BANLIEUE_UNIMPLEMENTED) return false;
    if (!slotPresent(slot)) {
      r_.fail(step, "describe claims " + what + ", but the table's " + slot + " slot is NULL");
      return true;
    }
    if (o_.strict()) {
      r_.fail(step, "describe claims " + what + ", but " + slot + " answered " +
                        outcomeText(result) + " (strict: --config is given)");
      return true;
    }
    return false;
  }

  bool loadManifest() {
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
    return true;
  }

  bool loadPlugin() {
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

  // The library's dynamic symbol table, read from the file: banlieue_provider_v1_init and
  // nothing else (a second export can bind to another plugin's or the host's symbols).
  void exportedSymbolsStep() {
    const std::string step = "exports";
    r_.begin(step);
    auto symbols = exportedSymbols(manifest_.libraryPath());
    if (!symbols.ok()) {
      r_.fail(step, symbols.status().message());
      return;
    }
    std::vector<std::string> extra;
    for (const auto& name : *symbols) {
      if (name != BANLIEUE_PROVIDER_V1_INIT_SYMBOL) extra.push_back(name);
    }
    if (extra.empty()) {
      r_.pass(step, std::string("only ") + BANLIEUE_PROVIDER_V1_INIT_SYMBOL);
      return;
    }
    std::string names;
    for (size_t i = 0; i < extra.size() && i < 10; ++i) names += (i ? ", " : "") + extra[i];
    if (extra.size() > 10) names += fmt::format(" and {} more", extra.size() - 10);
    r_.fail(step,
            fmt::format("{} exports {} symbol(s) besides {}: {}; build it with "
                        "banlieue_provider_plugin() (its version script exports only the "
                        "entry point)",
                        manifest_.library, extra.size(), BANLIEUE_PROVIDER_V1_INIT_SYMBOL, names));
  }

  // Every slot describe claims is in the table, in any mode: a NULL slot answers
  // UNIMPLEMENTED, which the host treats as a terminal failure of every object.
  void claimedSlots() {
    const std::string step = "slots";
    r_.begin(step);
    std::vector<std::string> missing;
    auto need = [&](const std::string& slot, const std::string& because) {
      if (!slotPresent(slot)) missing.push_back(slot + " (" + because + ")");
    };
    bool needs_instance = false;
    for (const auto& [kind, operations] : claimed_) {
      for (const auto& op : operations) {
        need(op, "claimed for " + kind);
        if (op != "validate") needs_instance = true;
      }
    }
    if (offers_introspect_) need("introspect", "operations.introspect is true");
    if (offers_import_) need("import_image", "operations.importImage is true");
    if (offers_delete_image_) need("delete_image", "operations.deleteImage is true");
    if (offers_snapshot_) need("snapshot", "operations.snapshot is true");
    if (offers_console_) need("console", "operations.console is true");
    if (offers_watch_) need("watch_changes", "operations.watchChanges is true");
    if (needs_instance || offers_introspect_ || offers_import_ || offers_delete_image_ ||
        offers_snapshot_ || offers_console_ || offers_watch_) {
      need("instance_create", "claimed slots run on an instance");
      need("instance_destroy", "claimed slots run on an instance");
    }
    if (missing.empty()) {
      r_.pass(step, "every slot describe claims is in the table");
      return;
    }
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    r_.fail(step, "describe claims slots the table leaves NULL: " + list);
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
      auto& operations = claimed_[served.back().kind];
      for (const auto& op : k["operations"].GetArray()) operations.insert(op.GetString());
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
    offers_delete_image_ = json::boolean(&doc, "operations.deleteImage", false);
    offers_snapshot_ = json::boolean(&doc, "operations.snapshot", false);
    offers_console_ = json::boolean(&doc, "operations.console", false);
    offers_watch_ = json::boolean(&doc, "operations.watchChanges", false);
    auto yes_no = [](bool b) { return b ? "yes" : "no"; };
    r_.pass("describe",
            fmt::format("{} kind(s), introspect {}, importImage {}, deleteImage {}, "
                        "snapshot {}, console {}, watchChanges {}",
                        served.size(), yes_no(offers_introspect_), yes_no(offers_import_),
                        yes_no(offers_delete_image_), yes_no(offers_snapshot_),
                        yes_no(offers_console_), yes_no(offers_watch_)));
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
    auto uid = sample_uids_.find(gvk.kind);
    set(meta, "uid", json::stringValue(uid == sample_uids_.end() ? randomUid() : uid->second, a));
    set(meta, "generation", rapidjson::Value(1));
    std::string sample_uid = json::stringOr(&doc, "metadata.uid");
    r_.sampleUid(gvk.kind, sample_uid);
    return {gvk.kind, json::serialize(doc), sample_uid};
  }

  // Judges a validate answer: OK (warnings in the body), INVALID_ARGUMENT, or UNIMPLEMENTED
  // when describe does not claim validate for the kind (or, lenient, claims it but has the slot).
  void judgeValidate(const std::string& step, const std::string& kind, const CallResult& result,
                     bool malformed) {
    if (!wellFormed(step, result)) return;
    if (claims(kind, "validate") &&
        unimplementedButClaimed(step, "validate for " + kind, "validate", result)) {
      return;
    }
    if (result.code() == BANLIEUE_OK && !malformed) {
      if (bodyMatches(step, "validate.response", result)) r_.pass(step, "sample accepted");
    } else if (result.code() == BANLIEUE_INVALID_ARGUMENT ||
               result.code() == BANLIEUE_UNIMPLEMENTED) {
      r_.pass(step, (malformed ? "" : "sample rejected: ") + outcomeText(result));
    } else if (malformed) {
      r_.fail(step, "expected INVALID_ARGUMENT for malformed JSON, got " + outcomeText(result));
    } else {
      r_.fail(step, "validate must answer OK or INVALID_ARGUMENT without I/O, got " +
                        outcomeText(result));
    }
  }

  void validateSample(const Sample& sample) {
    std::string step = "validate " + sample.kind;
    if (!pending(step)) return;
    r_.begin(step);
    auto result =
        plugin_->validate(sample.kind, validateRequest(sample.object_json), callOptions());
    judgeValidate(step, sample.kind, result, false);
  }

  void validateMalformed() {
    const std::string step = "validate malformed JSON";
    if (!pending(step)) return;
    r_.begin(step);
    std::string kind = samples_.empty() ? "Unknown" : samples_[0].kind;
    auto result = plugin_->validate(kind, "{\"object\": {\"metadata\": [", callOptions());
    judgeValidate(step, kind, result, true);
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

  void createInstance() {
    const std::string step = "instance_create";
    r_.begin(step);
    std::string config = instanceConfig();
    if (auto st = validatePayload("instance_create.request", config); !st.isOk()) {
      r_.fail(step, "--config: " + st.message());
      no_instance_ = "the --config file is not a valid instance_create request";
      return;
    }
    auto parsed_config = json::parse(config, "instance config");
    provider_json_ = json::serialize(*json::member(&parsed_config, "provider"));
    CallResult result;
    instance_ = plugin_->createInstance(config, callOptions(), result);
    if (!wellFormed(step, result)) {
      no_instance_ = "instance_create broke the contract";
      return;
    }
    if (instance_) {
      r_.pass(step, o_.config_file ? "connected with --config" : "created with the sample config");
      return;
    }
    if (o_.strict()) {
      r_.fail(step,
              "--config names the backend to check against, so instance_create must "
              "succeed; got " +
                  outcomeText(result) +
                  (slotPresent("instance_create") ? "" : " (the slot is NULL)"));
      no_instance_ = "instance_create failed";
      return;
    }
    r_.skip(step,
            "no instance (" + outcomeText(result) +
                "); pass --config with a reachable Provider to exercise introspect, reconcile, "
                "finalize and import_image");
    no_instance_ = "no instance (instance_create was skipped; pass --config)";
  }

  // True when an instance exists for `step`; otherwise lists the step as not run and why.
  // In a fresh process after a crash, the instance is made again (quietly) on first use.
  bool haveInstance(const std::string& step) {
    if (!instance_ && instance_retry_) {
      instance_retry_ = false;
      r_.setQuiet(true);
      createInstance();
      std::string why = r_.quietFailure();
      r_.setQuiet(false);
      if (!instance_) {
        no_instance_ = "a fresh process could not create the instance again" +
                       (why.empty() ? std::string() : ": " + why);
      }
    }
    if (instance_) return true;
    r_.skip(step, "not run: " + no_instance_);
    return false;
  }

  void introspect() {
    const std::string step = "introspect";
    if (!pending(step) || !haveInstance(step)) return;
    r_.begin(step);
    auto result = instance_->introspect(R"({"provider":)" + provider_json_ + "}", callOptions());
    if (!wellFormed(step, result)) return;
    if (result.ok()) {
      if (!bodyMatches(step, "introspect.response", result)) return;
      auto doc = json::parse(result.outcome.body, "introspect reply");
      for (const auto& fd : doc["failureDomains"].GetArray()) {
        failure_domains_.push_back(json::stringOr(&fd, "name"));
        r_.raw('F', failure_domains_.back());
      }
      r_.pass(step, fmt::format("{} failure domain(s)", failure_domains_.size()));
    } else if (result.code() == BANLIEUE_UNIMPLEMENTED && !offers_introspect_) {
      r_.pass(step, "not offered (describe says so)");
    } else if (result.code() == BANLIEUE_UNIMPLEMENTED && !slotPresent("introspect")) {
      r_.fail(step, "describe offers introspect, but the table's introspect slot is NULL");
    } else {
      r_.fail(step, outcomeText(result));
    }
  }

  // SINCE 1.4. The change feed's three promises that need no backend change: the first call
  // answers at once with a cursor and nothing changed; a call with that cursor answers by its
  // deadline (a long poll, not a hang); a cursor the plugin never handed out is answered with
  // "all". A plugin that does not offer it must answer UNIMPLEMENTED.
  void watchChanges() {
    const std::string step = "watch_changes";
    if (!pending(step) || !haveInstance(step)) return;
    r_.begin(step);
    auto call = [&](const std::string& cursor, std::chrono::milliseconds timeout) {
      CallOptions options = callOptions();
      options.timeout = timeout;
      return instance_->watchChanges(R"({"cursor":")" + common::jsonEscape(cursor) + "\"}",
                                     options);
    };
    auto first = call("", o_.deadline);
    if (!wellFormed(step, first)) return;
    if (!offers_watch_) {
      if (first.code() == BANLIEUE_UNIMPLEMENTED) {
        r_.pass(step, "not offered: UNIMPLEMENTED");
      } else {
        r_.fail(step, "describe does not offer watchChanges, but watch_changes answered " +
                          outcomeText(first));
      }
      return;
    }
    if (unimplementedButClaimed(step, "watchChanges", "watch_changes", first)) return;
    if (!first.ok()) {
      r_.fail(step, "the first call must answer OK at once, got " + outcomeText(first));
      return;
    }
    if (!bodyMatches(step, "watch_changes.response", first)) return;
    auto doc = json::parse(first.outcome.body, "watch_changes reply");
    if (json::boolean(&doc, "all", false) || doc["changed"].Size() != 0) {
      r_.fail(step, "the first call reports changes; it only starts following");
      return;
    }
    const auto bound = std::chrono::seconds(4);
    auto waited = call(json::stringOr(&doc, "cursor"), bound);
    if (!wellFormed(step, waited)) return;
    if (!waited.ok() || !bodyMatches(step, "watch_changes.response", waited)) {
      if (!waited.ok()) r_.fail(step, "a call with its cursor answered " + outcomeText(waited));
      return;
    }
    auto stranger = call("not-a-cursor-of-this-instance", bound);
    if (!wellFormed(step, stranger)) return;
    if (!stranger.ok() || !bodyMatches(step, "watch_changes.response", stranger)) {
      if (!stranger.ok()) {
        r_.fail(step, "a call with an unknown cursor answered " + outcomeText(stranger));
      }
      return;
    }
    auto unknown = json::parse(stranger.outcome.body, "watch_changes reply");
    if (!json::boolean(&unknown, "all", false)) {
      r_.fail(step, "an unknown cursor must be answered with \"all\": true");
      return;
    }
    r_.pass(step, fmt::format("first call at once ({} ms), a long poll within its {} s, an "
                              "unknown cursor answered with all",
                              first.elapsed.count() / 1000, bound.count()));
  }

  // Drives one slot until it stops answering IN_PROGRESS, waiting as the plugin hints (or
  // with backoff) up to --create-timeout; fails the step on a contract breach. With
  // `progress`, an OK is final only once the object has a providerID and is provisioned; OK
  // without any change kOkWithoutProgressLimit times in a row fails the step.
  std::optional<CallResult> drive(const std::string& step,
                                  const std::function<CallResult(const std::string& extra)>& call,
                                  ObjectProgress* progress = nullptr) {
    const auto started = std::chrono::steady_clock::now();
    std::string token;
    int polls = 0;
    int ok_without_progress = 0;
    for (;;) {
      r_.begin(step);
      auto result =
          call(token.empty() ? std::string()
                             : R"(,"operation":{"token":")" + common::jsonEscape(token) + "\"}");
      if (!wellFormed(step, result)) return std::nullopt;
      auto body = json::parse(result.outcome.body.empty() ? "{}" : result.outcome.body, "reply");
      std::string waiting_for;
      if (result.code() == BANLIEUE_IN_PROGRESS) {
        token = json::stringOr(&body, "operation.token");
        if (token.empty()) {
          r_.fail(step, "IN_PROGRESS without operation.token in the reply body");
          return std::nullopt;
        }
        if (progress) progress->apply(json::member(&body, "status"));
        ok_without_progress = 0;  // work goes on
        waiting_for = "still IN_PROGRESS";
      } else if (progress && result.ok()) {
        token.clear();  // OK without an operation clears the stored token
        if (!bodyMatches(step, "reconcile.response", result)) return std::nullopt;
        ObjectProgress before = *progress;
        progress->apply(json::member(&body, "status"));
        if (progress->finished()) return result;
        bool moved = progress->provider_id != before.provider_id ||
                     progress->provisioned != before.provisioned;
        ok_without_progress = moved ? 0 : ok_without_progress + 1;
        if (ok_without_progress >= kOkWithoutProgressLimit) {
          r_.fail(step, fmt::format("answered OK {} times in a row without progress ({}); OK "
                                    "means the object is where its spec wants it, so report "
                                    "providerID and initialization.provisioned, or answer "
                                    "IN_PROGRESS with an operation token while work goes on",
                                    ok_without_progress, progress->summary()));
          return std::nullopt;
        }
        waiting_for = "answering OK without providerID and provisioned";
      } else {
        return result;
      }
      auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started);
      if (elapsed >= o_.create_timeout) {
        r_.fail(step, fmt::format("{} after {} ms and {} polls (--create-timeout {} ms)",
                                  waiting_for, elapsed.count(), polls, o_.create_timeout.count()));
        return std::nullopt;
      }
      auto wait =
          std::min(pollDelay(result.outcome.requeue_after_ms, polls), o_.create_timeout - elapsed);
      r_.waiting(wait);  // so the watchdog allows for the wait
      std::this_thread::sleep_for(wait);
      ++polls;
    }
  }

  std::string objectRequest(const Sample& sample, const std::string& extra) const {
    auto status = status_.find(sample.kind);
    std::string object =
        status == status_.end() ? sample.object_json : withStatus(sample, status->second);
    return R"({"object":)" + object + extra + "}";
  }

  void reconcileSample(const Sample& sample) {
    const std::string step = "reconcile " + sample.kind;
    if (!pending(step) || !haveInstance(step)) return;
    const std::string& uid = sample.uid;
    ObjectProgress progress;
    auto reconciled = drive(
        step,
        [&](const std::string& extra) {
          status_[sample.kind] = progress.status_json;
          return instance_->reconcile(sample.kind, objectRequest(sample, extra), callOptions(uid));
        },
        o_.strict() ? &progress : nullptr);
    status_[sample.kind] = progress.status_json;
    if (!reconciled) return;
    plain_reconcile_code_[sample.kind] = reconciled->code();
    if (claims(sample.kind, "reconcile") &&
        unimplementedButClaimed(step, "reconcile for " + sample.kind, "reconcile", *reconciled)) {
      return;
    }
    if (reconciled->ok()) {
      if (!bodyMatches(step, "reconcile.response", *reconciled)) return;
      if (o_.strict()) {
        provider_id_[sample.kind] = progress.provider_id;
        r_.pass(step, "OK: " + progress.summary());
      } else {
        r_.pass(step, "OK");
      }
    } else if (o_.strict() && claims(sample.kind, "reconcile")) {
      r_.fail(step,
              "--config names the backend to check against, so reconcile of the sample "
              "must succeed; got " +
                  outcomeText(*reconciled));
    } else {
      r_.pass(step, "well-formed error: " + outcomeText(*reconciled));
    }
  }

  // Strict: the object is reconciled again as the host does on every resync; an idempotent
  // create finds the VM it made and answers the same providerID.
  void reconcileAgain(const Sample& sample) {
    const std::string step = "reconcile " + sample.kind + " again";
    if (!pending(step) || !haveInstance(step)) return;
    auto first = provider_id_.find(sample.kind);
    if (first == provider_id_.end() || first->second.empty()) {
      r_.skip(step, "not run: the first reconcile did not finish with a providerID");
      return;
    }
    // Starts from the status the first reconcile left, so an OK that leaves providerID out
    // keeps it (the host applies only the fields a reply carries).
    ObjectProgress progress;
    auto status = json::parse(status_[sample.kind], "status");
    progress.apply(&status);
    const std::string& uid = sample.uid;
    auto again = drive(
        step,
        [&](const std::string& extra) {
          status_[sample.kind] = progress.status_json;
          return instance_->reconcile(sample.kind, objectRequest(sample, extra), callOptions(uid));
        },
        &progress);
    status_[sample.kind] = progress.status_json;
    if (!again) return;
    if (!again->ok()) {
      r_.fail(step,
              "a second reconcile of the same object must succeed too; got " + outcomeText(*again));
    } else if (progress.provider_id != first->second) {
      r_.fail(step, "reconcile is not idempotent: the same uid answered providerID " +
                        progress.provider_id + ", the first reconcile " + first->second +
                        " (a second backend VM?)");
    } else {
      r_.pass(step, "idempotent: same providerID " + progress.provider_id);
    }
  }

  void finalizeSample(const Sample& sample) {
    for (const char* round : {"", " again"}) {
      std::string step = "finalize " + sample.kind + round;
      if (!pending(step) || !haveInstance(step)) continue;
      const std::string& uid = sample.uid;
      auto finalized = drive(step, [&](const std::string& extra) {
        return instance_->finalize(sample.kind, objectRequest(sample, extra), callOptions(uid));
      });
      if (!finalized) continue;
      if (finalized->ok()) {
        if (bodyMatches(step, "reconcile.response", *finalized)) {
          r_.pass(step, *round ? "idempotent" : "OK");
        }
      } else if (finalized->code() == BANLIEUE_UNIMPLEMENTED) {
        r_.fail(step, std::string("every served kind needs finalize (the host's finalizer waits "
                                  "for it)") +
                          (slotPresent("finalize") ? "" : "; the table's finalize slot is NULL"));
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
    std::string step = "finalize " + sample.kind + " never reconciled";
    if (!pending(step) || !haveInstance(step)) return;
    Sample fresh = withFreshUid(sample);
    const std::string& uid = fresh.uid;
    auto result = drive(step, [&](const std::string& extra) {
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
    std::string step = "reconcile " + sample.kind + " stale token";
    if (!pending(step) || !haveInstance(step)) return;
    Sample fresh = withFreshUid(sample);
    const std::string& uid = fresh.uid;
    r_.begin(step);
    auto result =
        instance_->reconcile(sample.kind,
                             R"({"object":)" + fresh.object_json +
                                 R"(,"operation":{"token":"banlieue-plugin-check-stale"}})",
                             callOptions(uid));
    if (wellFormed(step, result)) {
      auto plain = plain_reconcile_code_.find(sample.kind);
      bool same_as_first_call =
          plain != plain_reconcile_code_.end() && plain->second == result.code();
      if (result.code() == BANLIEUE_OK || result.code() == BANLIEUE_IN_PROGRESS ||
          same_as_first_call) {
        r_.pass(step, "treated as a first call: " + outcomeText(result));
      } else {
        r_.fail(step,
                "an operation token the plugin does not know must be treated as absent "
                "(re-derive the state from the backend), got " +
                    outcomeText(result));
      }
    }
    // Clean up whatever the call may have started.
    (void)drive(step + " cleanup", [&](const std::string& extra) {
      return instance_->finalize(sample.kind, R"({"object":)" + fresh.object_json + extra + "}",
                                 callOptions(uid));
    });
  }

  void unknownKind() {
    const std::string step = "reconcile unknown kind";
    if (!pending(step) || !haveInstance(step)) return;
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
    if (!pending(step) || !haveInstance(step)) return;
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
    auto result = drive(step, [&](const std::string& extra) {
      return instance_->importImage(request(extra), callOptions(uid));
    });
    if (result) {
      if (result->ok()) {
        if (bodyMatches(step, "reconcile.response", *result)) r_.pass(step, "imported into " + fd);
      } else if (unimplementedButClaimed(step, "importImage", "import_image", *result)) {
        // failed above; any other well-formed error may be the backend's own (no later step
        // needs the image, and a CI backend may lack what an upload needs)
      } else {
        r_.pass(step, "well-formed error: " + outcomeText(*result));
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    image_uid_ = uid;
    image_domain_ = fd;
  }

  // SINCE 1.1. Removes the image import_image made (or, when it made none, an image that was
  // never there: OK too), then asks again: a deletion is idempotent. A plugin that does not
  // offer it (every 1.0 plugin) must answer UNIMPLEMENTED or INVALID_ARGUMENT.
  void deleteImage() {
    const std::string step = "delete_image";
    if (!pending(step) || !haveInstance(step)) return;
    if (!offers_delete_image_) {
      r_.begin(step);
      auto result = instance_->deleteImage("{}", callOptions());
      if (!wellFormed(step, result)) return;
      if (result.code() == BANLIEUE_UNIMPLEMENTED || result.code() == BANLIEUE_INVALID_ARGUMENT) {
        r_.pass(step, "not offered: " + outcomeText(result));
      } else {
        r_.fail(step, "describe says deleteImage is not offered, but delete_image answered " +
                          outcomeText(result));
      }
      return;
    }
    std::string uid = image_uid_.empty() ? randomUid() : image_uid_;
    std::string fd = !image_domain_.empty()     ? image_domain_
                     : failure_domains_.empty() ? "default"
                                                : failure_domains_.front();
    auto request = [&](const std::string& extra) {
      return fmt::format(
          R"({{"image":{{"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage","metadata":{{"name":"banlieue-plugin-check","uid":"{}"}},"spec":{{}}}},)"
          R"("failureDomain":"{}"{}}})",
          uid, common::jsonEscape(fd), extra);
    };
    auto run = [&](const std::string& extra) {
      return instance_->deleteImage(request(extra), callOptions(uid));
    };
    auto result = drive(step, run);
    if (!result) return;
    if (unimplementedButClaimed(step, "deleteImage", "delete_image", *result)) return;
    if (!result->ok()) {
      r_.pass(step, "well-formed error: " + outcomeText(*result));
      return;
    }
    auto again = drive(step, run);
    if (!again) return;
    if (!again->ok()) {
      r_.fail(step, "deleted once, but deleting again (image already gone) answered " +
                        outcomeText(*again) + "; a deletion of what is gone is OK");
      return;
    }
    r_.pass(step, "deleted from " + fd + ", and again (idempotent)");
  }

  // SINCE 1.2. On the machine reconcile made: create a snapshot, create it again (the same
  // snapshotRef: create is idempotent by name), list (it is there), revert to it, delete it
  // and delete it again (OK: what is gone is deleted). Without a backend VM (no --config) a
  // well-formed error is enough. A plugin that does not offer snapshots (every 1.0 and 1.1
  // plugin) must answer UNIMPLEMENTED or INVALID_ARGUMENT.
  void snapshotSample(const Sample& sample) {
    const std::string step = "snapshot " + sample.kind;
    if (!pending(step) || !haveInstance(step)) return;
    const std::string machine = machineWithProviderId(sample);
    auto request = [&](const std::string& action, const std::string& ref,
                       const std::string& extra) {
      return fmt::format(
          R"({{"action":"{}","kind":"{}","machine":{},)"
          R"("snapshot":{{"name":"banlieue-plugin-check","uid":"{}-snap"}},"snapshotRef":"{}"{}}})",
          action, sample.kind, machine, sample.uid, common::jsonEscape(ref), extra);
    };
    if (!offers_snapshot_) {
      r_.begin(step);
      auto result = instance_->snapshot(request("list", "", ""), callOptions(sample.uid));
      if (!wellFormed(step, result)) return;
      if (result.code() == BANLIEUE_UNIMPLEMENTED || result.code() == BANLIEUE_INVALID_ARGUMENT) {
        r_.pass(step, "not offered: " + outcomeText(result));
      } else {
        r_.fail(step, "describe says snapshot is not offered, but snapshot answered " +
                          outcomeText(result));
      }
      return;
    }
    auto run = [&](const std::string& action, const std::string& ref) -> std::optional<CallResult> {
      auto result = drive(step, [&](const std::string& extra) {
        return instance_->snapshot(request(action, ref, extra), callOptions(sample.uid));
      });
      if (result && result->ok() && !bodyMatches(step, "snapshot.response", *result)) {
        return std::nullopt;
      }
      return result;
    };
    auto created = run("create", "");
    if (!created) return;
    if (unimplementedButClaimed(step, "snapshot", "snapshot", *created)) return;
    const bool has_vm = !provider_id_[sample.kind].empty();
    if (!created->ok()) {
      if (o_.strict() && has_vm) {
        r_.fail(step, "the machine has a backend VM (providerID " + provider_id_[sample.kind] +
                          "), so a snapshot of it must succeed; got " + outcomeText(*created));
      } else {
        r_.pass(step, "well-formed error: " + outcomeText(*created));
      }
      return;
    }
    auto ref_of = [](const CallResult& result) {
      auto body = json::parse(result.outcome.body.empty() ? "{}" : result.outcome.body, "reply");
      return json::stringOr(&body, "status.snapshotRef");
    };
    const std::string ref = ref_of(*created);
    if (ref.empty()) {
      r_.fail(step, "create answered OK without status.snapshotRef");
      return;
    }
    auto again = run("create", "");
    if (!again) return;
    if (!again->ok() || ref_of(*again) != ref) {
      r_.fail(step, "create is not idempotent: the same name answered " + outcomeText(*again) +
                        " with snapshotRef '" + ref_of(*again) + "', the first create '" + ref +
                        "' (a second snapshot?)");
      return;
    }
    auto listed = run("list", "");
    if (!listed) return;
    if (!listed->ok() || listed->outcome.body.find(common::jsonEscape(ref)) == std::string::npos) {
      r_.fail(step, "list after create must name snapshotRef '" + ref + "'; got " +
                        outcomeText(*listed) + " " + listed->outcome.body);
      return;
    }
    for (const char* action : {"revert", "delete", "delete"}) {
      auto result = run(action, ref);
      if (!result) return;
      if (!result->ok()) {
        r_.fail(step,
                fmt::format(
                    "{} of snapshot '{}' answered {}{}", action, ref, outcomeText(*result),
                    std::string(action) == "delete" ? " (a deletion of what is gone is OK)" : ""));
        return;
      }
    }
    r_.pass(step, "created " + ref + " (idempotent), listed, reverted, deleted twice");
  }

  // SINCE 1.3. On the machine reconcile made: open its serial console, read with a short wait
  // (the wait is honoured: a read returns within it, plus a round trip), type a carriage
  // return, read again, close. Without a backend VM (no --config) a well-formed error is
  // enough, and so is FAILED_PRECONDITION (a machine that is off, a console someone else
  // holds). A plugin that does not offer consoles (every plugin older than 1.3) must answer
  // UNIMPLEMENTED or INVALID_ARGUMENT.
  void consoleSample(const Sample& sample) {
    const std::string step = "console " + sample.kind;
    if (!pending(step) || !haveInstance(step)) return;
    const std::string request = fmt::format(R"({{"kind":"{}","machine":{},"console":"serial"}})",
                                            sample.kind, machineWithProviderId(sample));
    r_.begin(step);
    std::unique_ptr<PluginConsole> console;
    auto opened = instance_->openConsole(request, console, callOptions(sample.uid));
    if (!wellFormed(step, opened)) return;
    if (!offers_console_) {
      if (opened.code() == BANLIEUE_UNIMPLEMENTED || opened.code() == BANLIEUE_INVALID_ARGUMENT) {
        r_.pass(step, "not offered: " + outcomeText(opened));
      } else {
        r_.fail(step, "describe says console is not offered, but console_open answered " +
                          outcomeText(opened));
      }
      return;
    }
    if (opened.code() == BANLIEUE_UNIMPLEMENTED &&
        opened.outcome.reason == "SerialConsoleUnavailable") {
      return ticketConsole(step, sample);  // a backend whose console is a ticket (vSphere)
    }
    if (unimplementedButClaimed(step, "console", "console", opened)) return;
    const bool has_vm = !provider_id_[sample.kind].empty();
    if (!opened.ok()) {
      if (o_.strict() && has_vm && opened.code() != BANLIEUE_FAILED_PRECONDITION) {
        r_.fail(step, "the machine has a backend VM (providerID " + provider_id_[sample.kind] +
                          "), so its console must open (or say why not with "
                          "FAILED_PRECONDITION); got " +
                          outcomeText(opened));
      } else {
        r_.pass(step, "well-formed error: " + outcomeText(opened));
      }
      return;
    }
    if (!bodyMatches(step, "console.response", opened)) return;
    constexpr std::chrono::milliseconds kWait{300};
    constexpr std::chrono::seconds kSlack{5};
    size_t read_bytes = 0;
    auto readOnce = [&]() -> bool {
      const auto started = std::chrono::steady_clock::now();
      auto io = console->read(4096, kWait);
      const auto took = std::chrono::steady_clock::now() - started;
      if (!io.violation.empty()) {
        r_.fail(step, io.violation);
        return false;
      }
      if (!io.ok() && !io.ended()) {
        r_.fail(step, "console_read answered " + sdk::codeName(io.code) +
                          "; only OK (with or without bytes) or OUT_OF_RANGE (ended)");
        return false;
      }
      if (took > kWait + kSlack) {
        r_.fail(step,
                fmt::format("console_read with a {} ms wait took {} ms", kWait.count(),
                            std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
        return false;
      }
      read_bytes += io.data.size();
      return true;
    };
    if (!readOnce()) return;
    auto typed = console->write("\r");
    if (!typed.violation.empty()) {
      r_.fail(step, typed.violation);
      return;
    }
    if (!typed.ok() && !typed.ended()) {
      r_.fail(step, "console_write answered " + sdk::codeName(typed.code));
      return;
    }
    if (!readOnce()) return;
    console.reset();
    auto body = json::parse(opened.outcome.body.empty() ? "{}" : opened.outcome.body, "reply");
    const std::string description = json::stringOr(&body, "status.description");
    r_.pass(step, fmt::format("opened{}, read {} byte(s) with {} ms waits, typed a carriage "
                              "return, closed",
                              description.empty() ? "" : " (" + description + ")", read_bytes,
                              kWait.count()));
  }

  // A backend with no serial stream (SerialConsoleUnavailable) offers its console as a ticket:
  // the webmks console opens with no stream and a wss:// URL in the reply, which matches the
  // schema. Without a backend VM a well-formed error is enough, as for a serial console. The
  // URL is a credential: the report shows neither it nor its ticket.
  void ticketConsole(const std::string& step, const Sample& sample) {
    const std::string request = fmt::format(R"({{"kind":"{}","machine":{},"console":"webmks"}})",
                                            sample.kind, machineWithProviderId(sample));
    std::unique_ptr<PluginConsole> console;
    auto opened = instance_->openConsole(request, console, callOptions(sample.uid));
    if (!wellFormed(step, opened)) return;
    const bool has_vm = !provider_id_[sample.kind].empty();
    if (!opened.ok()) {
      if (o_.strict() && has_vm && opened.code() != BANLIEUE_FAILED_PRECONDITION) {
        r_.fail(step, "serial is unavailable and the machine has a backend VM (providerID " +
                          provider_id_[sample.kind] +
                          "), so its webmks console must open (or say why not with "
                          "FAILED_PRECONDITION); got " +
                          outcomeText(opened));
      } else {
        r_.pass(step, "serial unavailable; webmks: well-formed error: " + outcomeText(opened));
      }
      return;
    }
    if (console != nullptr) {
      r_.fail(step, "console_open opened a stream for the webmks console, which is a ticket");
      return;
    }
    if (!bodyMatches(step, "console.response", opened)) return;
    auto body = json::parse(opened.outcome.body, "reply");
    const std::string description = json::stringOr(&body, "status.description");
    const auto expires = json::integer(&body, "status.expiresInSeconds");
    std::fill(opened.outcome.body.begin(), opened.outcome.body.end(), '\0');
    r_.pass(step, fmt::format("serial unavailable; webmks: a wss:// ticket URL{}{}",
                              expires ? fmt::format(" valid {} s", *expires) : std::string(),
                              description.empty() ? "" : " (" + description + ")"));
  }

  // The sample as the host sends it once reconciled: its status, and the providerID the
  // runtime moved to spec.providerID.
  std::string machineWithProviderId(const Sample& sample) const {
    auto status = status_.find(sample.kind);
    auto object = json::parse(
        status == status_.end() ? sample.object_json : withStatus(sample, status->second),
        "sample");
    auto id = provider_id_.find(sample.kind);
    std::string provider_id =
        id != provider_id_.end() ? id->second : json::stringOr(&object, "status.providerID");
    if (!provider_id.empty() && object.HasMember("spec") && object["spec"].IsObject()) {
      auto& a = object.GetAllocator();
      object["spec"].RemoveMember("providerID");
      object["spec"].AddMember("providerID", json::stringValue(provider_id, a), a);
    }
    return json::serialize(object);
  }

  const CheckOptions& o_;
  Reporter& r_;
  const DoneSteps& done_;
  const std::map<std::string, std::string>& sample_uids_;
  Manifest manifest_;
  std::shared_ptr<Plugin> plugin_;
  std::unique_ptr<PluginInstance> instance_;
  bool instance_retry_ = false;
  std::string no_instance_ = "no instance";
  std::vector<Sample> samples_;
  std::map<std::string, std::set<std::string>> claimed_;  // kind -> operations describe claims
  std::vector<std::string> failure_domains_;
  std::string provider_json_;
  std::map<std::string, banlieue_status> plain_reconcile_code_;  // per kind
  std::map<std::string, std::string> status_;                    // per kind, as last applied
  std::map<std::string, std::string> provider_id_;               // per kind, first reconcile
  bool offers_introspect_ = true;
  bool offers_import_ = false;
  bool offers_delete_image_ = false;
  bool offers_snapshot_ = false;
  bool offers_console_ = false;
  bool offers_watch_ = false;
  std::string image_uid_;     // the image import_image made, for delete_image
  std::string image_domain_;  // where it made it
};

// ---- the parent side ------------------------------------------------------------------

// Why a child process ended before its last step, as the failure of the step it was in.
CheckStep abnormalEnd(const ChildExit& exit, const std::string& current_step,
                      const CheckOptions& options) {
  std::string where = current_step.empty() ? "between steps" : "during '" + current_step + "'";
  if (exit.timed_out) {
    bool slot_call = current_step != "manifest" && current_step != "load" && !current_step.empty();
    return {current_step.empty() ? "watchdog" : current_step, Verdict::kFail,
            slot_call
                ? fmt::format("did not return within its {} ms deadline (+{} ms grace); the plugin "
                              "ignores cancellation, so the checker killed it",
                              options.deadline.count(), options.grace.count())
                : fmt::format("hung for more than {} ms ({}); the checker killed it",
                              (options.deadline + options.grace).count(),
                              current_step == "load" ? "loading or initialising the plugin"
                                                     : "between steps")};
  }
  if (exit.signal != 0) {
    return {current_step.empty() ? "crash" : current_step, Verdict::kFail,
            "the plugin crashed with " + signalName(exit.signal) + " " + where};
  }
  return {current_step.empty() ? "exit" : current_step, Verdict::kFail,
          fmt::format("the plugin ended the check process with exit code {} {} "
                      "(exit() called, or a crash caught by a sanitizer)",
                      exit.exit_code, where)};
}

// Runs the check in child processes: after a crash or a hang the step it happened in fails
// and a fresh child goes on with the next step, so every step runs and is listed.
CheckReport runInChild(const CheckOptions& options, bool full) {
  CheckReport report;
  report.directory = options.directory;
  Resume resume;
  DoneSteps& done = resume.done;
  std::vector<std::string> plan;  // the steps after describe, as the child announced them
  std::string not_run;            // why steps of the plan never ran, if any did not
  auto step_budget = options.deadline + options.grace;
  for (;;) {
    std::string current_step;
    bool reported_failure = false;
    auto exit = runForked(
        [&](const LineWriter& out) {
          Reporter reporter(out);
          CheckRun(options, reporter, resume).run(full);
          return reporter.failed() ? 1 : 0;
        },
        [&](std::string_view line) -> std::chrono::milliseconds {
          if (line.size() < 2) return step_budget;
          std::string_view payload = line.substr(2);
          switch (line[0]) {
            case 'B': current_step = std::string(payload); break;
            case 'E': current_step.clear(); break;
            case 'F': resume.failure_domains.emplace_back(payload); break;
            case 'U': {
              auto space = payload.find(' ');
              if (space != std::string_view::npos) {
                resume.sample_uids.emplace(payload.substr(0, space), payload.substr(space + 1));
              }
              break;
            }
            case 'P':
              if (std::find(plan.begin(), plan.end(), payload) == plan.end()) {
                plan.emplace_back(payload);
              }
              break;
            case 'W': {
              int64_t wait = 0;
              std::from_chars(payload.data(), payload.data() + payload.size(), wait);
              return step_budget + std::chrono::milliseconds(std::max<int64_t>(wait, 0));
            }
            case 'M': report.manifest_json = std::string(payload); break;
            case 'D': report.descriptor_json = std::string(payload); break;
            case 'L': report.library = std::string(payload); break;
            case 'R': {
              rapidjson::Document doc;
              doc.Parse(payload.data(), payload.size());
              if (!doc.HasParseError()) {
                CheckStep step{
                    json::stringOr(&doc, "name"),
                    verdictFrom(json::stringOr(&doc, "verdict")).value_or(Verdict::kFail),
                    json::stringOr(&doc, "detail")};
                reported_failure = reported_failure || step.verdict == Verdict::kFail;
                done[step.name] = step.verdict;
                report.steps.push_back(std::move(step));
              }
              current_step.clear();
              break;
            }
            default: break;
          }
          return step_budget;
        },
        step_budget);
    if (exit.spawn_errno != 0) {
      report.steps.push_back(
          {"checker", Verdict::kFail,
           std::string("could not start the check process: ") + std::strerror(exit.spawn_errno)});
      not_run = "the check process could not be started";
      break;
    }
    bool clean = !exit.timed_out && exit.signal == 0 && current_step.empty() &&
                 (exit.exit_code == 0 || (exit.exit_code == 1 && reported_failure));
    if (clean) break;
    CheckStep failure = abnormalEnd(exit, current_step, options);
    if (current_step.empty() || isFoundationStep(current_step)) {
      report.steps.push_back(failure);
      not_run = current_step.empty() ? "the check process ended between steps"
                                     : "every later step needs '" + current_step + "'";
      break;
    }
    if (done.count(current_step) != 0) {
      // It broke again while a fresh process repeated a step that had passed: stop here.
      failure.name = "restart";
      failure.detail += " (repeated in a fresh process to go on after an earlier failure)";
      report.steps.push_back(std::move(failure));
      not_run = "the fresh process could not repeat '" + current_step + "'";
      break;
    }
    done[current_step] = Verdict::kFail;
    report.steps.push_back(std::move(failure));
  }
  if (full) {
    for (const auto& step : plan) {
      if (done.count(step) != 0) continue;
      report.steps.push_back(
          {step, Verdict::kFail,
           "not run: " + (not_run.empty() ? "the check process ended before it" : not_run)});
    }
    if (plan.empty() && !not_run.empty()) {
      report.steps.push_back({"remaining steps", Verdict::kFail, "not run: " + not_run});
    }
  }
  return report;
}

}  // namespace

std::chrono::milliseconds pollDelay(int64_t hint_ms, int poll) {
  if (hint_ms > 0) {
    return std::clamp(std::chrono::milliseconds(hint_ms), kMinPollInterval, kMaxPollInterval);
  }
  auto wait = kFirstPollBackoff;
  for (int i = 0; i < poll && wait < kMaxPollInterval; ++i) wait *= 2;
  return std::min(wait, kMaxPollInterval);
}

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
