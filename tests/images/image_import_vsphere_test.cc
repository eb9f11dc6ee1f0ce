// `banlieue image-import` of an ISO into vcsim through the vSphere plugin: the Provider and the
// credentials (a Secret-volume-like directory, one file per key) come from files, the VMImage
// asks for a deferred-install template so no installer has to run in the simulator. The ISO
// lands as a template in the zone's folder; a flipped byte is refused with ChecksumMismatch
// before the plugin is even loaded. The template knobs (issue #27) on their own vcsim each: a
// zone reuses the ISO a datastore it reaches already holds (forceUpload uploads again), every
// build step shows as a progress phase and a stuck installer times out with a reason,
// forceCreate replaces an earlier import's template, retainOnDelete keeps it. Labels:
// integration;images.
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/import_exit.h"
#include "plugins/vsphere/src/image_import.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"
#include "tests/vsphere/plugin_driver.h"
#include "tests/vsphere/vcsim.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace banlieue::roles::images {
namespace {

using ::banlieue::testing::readFile;

namespace fs = std::filesystem;
namespace json = sdk::json;
using ::testing::HasSubstr;
using testing::runCommand;
using testing::shellQuote;

TEST(ImageImportVsphereTest, IsoBecomesATemplateInTheZoneAndCorruptIsosAreRefused) {
  vsphere::testing::Vcsim vcsim;
  char tmpl[] = "/tmp/banlieue-image-import-vsphere-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  fs::path dir = tmpl;

  // instance_create's config, split the way a Job receives it: the Provider object, and the
  // credentials Secret mounted as files.
  rapidjson::Document config;
  std::string config_text = vcsim.instanceConfig();
  config.Parse(config_text.data(), config_text.size());
  ASSERT_TRUE(config.IsObject());
  std::ofstream(dir / "provider.json") << json::serialize(config["provider"]);
  fs::create_directories(dir / "credentials");
  for (const auto& m : config["credentials"].GetObject()) {
    std::ofstream(dir / "credentials" / m.name.GetString()) << m.value.GetString();
  }
  std::ofstream(dir / "image.yaml") << R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: kairos-iso, uid: 7e1d0c4b-0000-4000-8000-000000000011}
spec:
  osFamily: linux
  sources:
  - {providerClass: vsphere, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
  template:
    rootFolder: banlieue-templates
    installMode: deferred
    cpus: 2
    memoryMib: 2048
    disk: {size: 16}
    network:
    - {network: VM Network}
status:
  buildArtifact: {kind: iso, phase: Ready, file: kairos-iso.iso}
)";
  fs::path iso = dir / "kairos-iso.iso";
  std::ofstream(iso, std::ios::binary) << std::string(size_t{512} * 1024, 'k');
  auto sha = fileDigest(iso, "sha256");
  ASSERT_TRUE(sha.ok());

  auto import = [&](const fs::path& artifact) {
    fs::path term = dir / "termination-log";
    fs::remove(term);
    auto r = runCommand(std::string(BANLIEUE_BINARY) + " image-import --plugin-dir " +
                            shellQuote(PLUGIN_BUILD_DIR) + " --backend vsphere --provider-file " +
                            shellQuote((dir / "provider.json").string()) + " --image-file " +
                            shellQuote((dir / "image.yaml").string()) + " --credentials-dir " +
                            shellQuote((dir / "credentials").string()) +
                            " --failure-domain vcsim-dc0-dc0-c0 --format iso --artifact " +
                            shellQuote(artifact.string()) + " --checksum sha256:" + *sha +
                            " --termination-log " + shellQuote(term.string()),
                        std::chrono::seconds(120));
    return std::make_pair(r, readFile(term));
  };

  fs::path flipped = dir / "flipped.iso";
  fs::copy_file(iso, flipped);
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12345);
    f.put('K');
  }
  auto [bad, bad_term] = import(flipped);
  EXPECT_EQ(bad.exit_code, kImportChecksumMismatch) << bad.output;
  EXPECT_THAT(bad_term, HasSubstr(R"("reason":"ChecksumMismatch")"));
  // Nothing reached vCenter: the plugin was never loaded, let alone connected.
  EXPECT_THAT(bad.output, ::testing::Not(HasSubstr("loaded plugin")));

  auto [ok, ok_term] = import(iso);
  ASSERT_EQ(ok.exit_code, kImportOk) << ok.output;
  EXPECT_THAT(ok_term, HasSubstr(R"("reason":"Imported")"));
  EXPECT_THAT(ok_term, HasSubstr(R"("resolvedRef":"kairos-iso")"));
  EXPECT_THAT(ok.output, HasSubstr("loaded plugin"));

  // Idempotent: the template exists, a second run reports it without creating anything.
  auto [again, again_term] = import(iso);
  EXPECT_EQ(again.exit_code, kImportOk) << again.output;
  fs::remove_all(dir);
}

// `banlieue image-import` as an import Job runs it, against `vcsim`: the Provider and the
// credentials as files, and a 512 KiB ISO.
class CommandImport {
 public:
  explicit CommandImport(const vsphere::testing::Vcsim& vcsim) {
    char tmpl[] = "/tmp/banlieue-image-import-vsphere-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    rapidjson::Document config;
    std::string config_text = vcsim.instanceConfig();
    config.Parse(config_text.data(), config_text.size());
    std::ofstream(dir_ / "provider.json") << json::serialize(config["provider"]);
    fs::create_directories(dir_ / "credentials");
    for (const auto& m : config["credentials"].GetObject()) {
      std::ofstream(dir_ / "credentials" / m.name.GetString()) << m.value.GetString();
    }
    std::ofstream(iso(), std::ios::binary) << std::string(size_t{512} * 1024, 'k');
    auto sha = fileDigest(iso(), "sha256");
    if (!sha.ok()) throw std::runtime_error("cannot hash the ISO");
    sha_ = *sha;
  }
  ~CommandImport() { fs::remove_all(dir_); }

  fs::path iso() const { return dir_ / "kairos-iso.iso"; }
  const std::string& sha() const { return sha_; }

  // Imports the ISO as `image_yaml` describes into `zone`; the command's result and its
  // termination log.
  std::pair<testing::CommandResult, std::string> run(const std::string& image_yaml,
                                                     const std::string& zone) {
    std::ofstream(dir_ / "image.yaml") << image_yaml;
    fs::path term = dir_ / "termination-log";
    fs::remove(term);
    auto r = runCommand(std::string(BANLIEUE_BINARY) + " image-import --plugin-dir " +
                            shellQuote(PLUGIN_BUILD_DIR) + " --backend vsphere --provider-file " +
                            shellQuote((dir_ / "provider.json").string()) + " --image-file " +
                            shellQuote((dir_ / "image.yaml").string()) + " --credentials-dir " +
                            shellQuote((dir_ / "credentials").string()) + " --failure-domain " +
                            zone + " --format iso --artifact " + shellQuote(iso().string()) +
                            " --checksum sha256:" + sha_ + " --termination-log " +
                            shellQuote(term.string()),
                        std::chrono::seconds(120));
    return {r, readFile(term)};
  }

 private:
  fs::path dir_;
  std::string sha_;
};

struct DatastoreState {
  std::string url;  // vcsim: the local directory behind the datastore
  int64_t free_space = 0;
};

std::map<std::string, DatastoreState> datastores(vsphere::testing::Backend& backend) {
  auto r = backend.vim().retrieveFromContainer(
      backend.vim().client().content(backend.deadline()).root_folder,
      {{"Datastore", {"name", "summary.url", "summary.freeSpace"}}}, backend.deadline());
  std::map<std::string, DatastoreState> out;
  for (const auto& o : r.objects) {
    out[o.text("name")] = {o.text("summary.url"), o.integer("summary.freeSpace").value_or(0)};
  }
  return out;
}

// The ISO the template in `folder` was made with (the import's guestinfo record of it).
std::string templateIso(vsphere::testing::Backend& backend, const std::string& path) {
  vsphere::MoRef vm = backend.find(path);
  if (vm.empty()) return "no VM at " + path;
  auto r = backend.vim().retrieveObjects({vm}, {{"VirtualMachine", {"config.extraConfig"}}},
                                         backend.deadline());
  std::string iso;
  for (pugi::xml_node option :
       vsphere::children(r.objects.at(0).node("config.extraConfig"), "OptionValue")) {
    if (vsphere::childText(option, "key").value_or("") == "guestinfo.banlieue.import.iso") {
      iso = vsphere::childText(option, "value").value_or("");
    }
  }
  return iso;
}

std::string deferredImage(const std::string& extra_template_fields = "") {
  return R"(apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: kairos-iso, uid: 7e1d0c4b-0000-4000-8000-000000000012}
spec:
  osFamily: linux
  sources:
  - {providerClass: vsphere, kind: Url, ref: unused, importFrom: quay.io/kairos/ubuntu:1}
  template:
    rootFolder: banlieue-templates
    installMode: deferred
    disk: {size: 16}
    network:
    - {network: VM Network}
)" + extra_template_fields +
         R"(status:
  buildArtifact: {kind: iso, phase: Ready, file: kairos-iso.iso}
)";
}

// Two datastores reached by three clusters (zones). The first import uploads to the emptiest
// one, and its VM's 16 GiB disk makes the other one the emptiest; the second zone's import
// finds the ISO on the first datastore and uploads nothing (no Uploading phase, no second copy,
// the first one untouched); forceUpload in the third zone uploads to the emptiest again.
TEST(ImageImportVsphereTest, AZoneReusesTheIsoADatastoreHoldsAndForceUploadUploadsAgain) {
  vsphere::testing::Vcsim vcsim({"-ds", "2", "-cluster", "3"});
  CommandImport importer(vcsim);
  vsphere::testing::Backend backend(vcsim);
  const std::string iso = vsphere::isoDatastorePath("kairos-iso", importer.sha());
  auto holders = [&] {
    std::set<std::string> names;
    for (const auto& [name, ds] : datastores(backend)) {
      if (fs::exists(fs::path(ds.url) / iso)) names.insert(name);
    }
    return names;
  };
  ASSERT_EQ(datastores(backend).size(), 2u);

  auto [first, first_term] = importer.run(deferredImage(), "vcsim-dc0-dc0-c0");
  ASSERT_EQ(first.exit_code, kImportOk) << first.output;
  EXPECT_THAT(first.output, HasSubstr("phase=Uploading"));
  // Each step's phase is logged (what the zone row shows), however soon the next one comes.
  EXPECT_THAT(first.output, HasSubstr("phase=CreatingVM"));
  ASSERT_EQ(holders().size(), 1u);
  const std::string holder = *holders().begin();
  auto state = datastores(backend);
  std::string other;
  for (const auto& [name, ds] : state) {
    if (name != holder) other = name;
  }
  ASSERT_GT(state[other].free_space, state[holder].free_space)
      << "the test needs the datastore without the ISO to be the emptiest";
  const auto written = fs::last_write_time(fs::path(state[holder].url) / iso);

  auto [second, second_term] = importer.run(deferredImage(), "vcsim-dc0-dc0-c1");
  ASSERT_EQ(second.exit_code, kImportOk) << second.output;
  EXPECT_EQ(holders(), std::set<std::string>{holder}) << "the ISO was uploaded again";
  EXPECT_EQ(fs::last_write_time(fs::path(state[holder].url) / iso), written);
  EXPECT_THAT(second.output, Not(HasSubstr("phase=Uploading")));
  EXPECT_EQ(templateIso(backend, "DC0/vm/banlieue-templates/vcsim-dc0-dc0-c1/kairos-iso"),
            "[" + holder + "] " + iso);

  auto [forced, forced_term] =
      importer.run(deferredImage("    forceUpload: true\n"), "vcsim-dc0-dc0-c2");
  ASSERT_EQ(forced.exit_code, kImportOk) << forced.output;
  EXPECT_EQ(holders(), (std::set<std::string>{holder, other}));
  EXPECT_THAT(forced.output, HasSubstr("phase=Uploading"));
  EXPECT_EQ(templateIso(backend, "DC0/vm/banlieue-templates/vcsim-dc0-dc0-c2/kairos-iso"),
            "[" + other + "] " + iso);
}

// import_image through the plugin, as the import Job calls it.
class PluginImport {
 public:
  explicit PluginImport(const vsphere::testing::Vcsim& vcsim) : backend_(vcsim) {
    if (!driver_.create(vcsim.instanceConfig()).ok()) throw std::runtime_error("instance_create");
    char path[] = "/tmp/banlieue-iso-XXXXXX";
    int fd = ::mkstemp(path);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    ::close(fd);
    iso_ = path;
    std::ofstream(iso_) << std::string(256 * 1024, 'x');
  }
  ~PluginImport() {
    driver_.destroy();
    fs::remove(iso_);
  }

  // The import_image request for image `name` whose spec.template is `template_json` and
  // whose metadata.annotations are `annotations`.
  std::string request(const std::string& name, const std::string& template_json,
                      const std::string& annotations = "{}") const {
    return R"({"image":{"metadata":{"name":")" + name + R"(","annotations":)" + annotations +
           R"(},"spec":{"osFamily":"linux","template":)" + template_json +
           R"(}},"artifact":{"path":")" + iso_.string() + R"(","format":"iso","sha256":")" + kSha +
           R"(","sizeBytes":262144},"failureDomain":"vcsim-dc0-dc0-c0"})";
  }
  // delete_image's request for the same image.
  static std::string removal(const std::string& name, const std::string& template_json) {
    return R"({"image":{"metadata":{"name":")" + name + R"("},"spec":{"template":)" +
           template_json + R"(}},"failureDomain":"vcsim-dc0-dc0-c0","resolvedRef":")" + name +
           R"("})";
  }
  std::string templatePath(const std::string& name) const {
    return "DC0/vm/banlieue-templates/vcsim-dc0-dc0-c0/" + name;
  }

  vsphere::testing::PluginDriver& driver() { return driver_; }
  vsphere::testing::Backend& backend() { return backend_; }

  static constexpr const char* kSha =
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  static constexpr const char* kUid = "9a9b9c9d-0000-4000-8000-000000000027";

 private:
  vsphere::testing::PluginDriver driver_;
  vsphere::testing::Backend backend_;
  fs::path iso_;
};

// Calls import_image with the token of the previous answer until it is not IN_PROGRESS, or
// until `stop_at` is the answer's reason; the progress phases seen, each once in order.
sdk::abi::CallOutcome importUntil(PluginImport& p, const std::string& request,
                                  std::vector<std::string>& phases,
                                  const std::string& stop_at = "") {
  std::string token;
  sdk::abi::CallOutcome outcome;
  for (int i = 0; i < 100; ++i) {
    std::string body = request;
    if (!token.empty()) {
      body.pop_back();
      body += R"(,"operation":{"token":")" + token + R"("}})";
    }
    outcome = p.driver().once("import_image", "", PluginImport::kUid, body);
    if (outcome.code != BANLIEUE_IN_PROGRESS) return outcome;
    auto reply = json::parse(outcome.body, "reply");
    std::string phase = json::stringOr(&reply, "status.progress.phase");
    if (phases.empty() || phases.back() != phase) phases.push_back(phase);
    // The ABI: an IN_PROGRESS reply carries an operation (sdk/schemas/reconcile.response.json).
    std::string next = json::stringOr(&reply, "operation.token");
    EXPECT_FALSE(next.empty()) << "IN_PROGRESS without an operation token in phase " << phase;
    if (!next.empty()) token = next;
    if (outcome.reason == stop_at) return outcome;
  }
  return outcome;
}

// An immediate install, step by step as the zone row shows it, on the NIC and disk controller
// models asked for; then a second image whose installer never powers the VM off.
TEST(ImageImportVsphereTest, EveryBuildStepIsAPhaseAndAStuckInstallerTimesOut) {
  vsphere::testing::Vcsim vcsim;
  PluginImport p(vcsim);
  const std::string request =
      p.request("kairos-steps",
                R"({"rootFolder":"banlieue-templates","cpus":2,"memoryMib":2048,)"
                R"("disk":{"size":16,"controller":"lsiLogicSas"},)"
                R"("network":[{"network":"VM Network","adapter":"e1000e","pciSlot":224},{}]})");
  std::vector<std::string> phases;
  auto installing = importUntil(p, request, phases, "Installing");
  ASSERT_EQ(installing.code, BANLIEUE_IN_PROGRESS)
      << installing.reason << ": " << installing.message;
  EXPECT_EQ(installing.reason, "Installing");
  vsphere::MoRef vm = p.backend().find(p.templatePath("kairos-steps"));
  ASSERT_FALSE(vm.empty());
  p.backend().runTask("PowerOffVM_Task", vm);  // the installer is done
  auto done = importUntil(p, request, phases);
  ASSERT_TRUE(done.ok()) << done.reason << ": " << done.message;
  EXPECT_EQ(phases, (std::vector<std::string>{"Uploading", "CreatingVM", "PoweringOn", "Installing",
                                              "RemovingCdrom"}));

  auto live = p.backend().vm("kairos-steps", {"config.template", "config.hardware.device"});
  ASSERT_TRUE(live.has_value());
  EXPECT_TRUE(live->boolean("config.template"));
  std::vector<std::string> types;
  std::string slot;
  for (pugi::xml_node device :
       vsphere::children(live->node("config.hardware.device"), "VirtualDevice")) {
    std::string type = vsphere::xsiType(device);
    if (type == "VirtualE1000e") {
      slot = vsphere::childText(vsphere::child(device, "slotInfo"), "pciSlotNumber").value_or("");
    }
    if (type == "VirtualE1000e" || type == "VirtualVmxnet3" ||
        type == "VirtualLsiLogicSASController" || type == "ParaVirtualSCSIController") {
      types.push_back(type);
    }
  }
  EXPECT_THAT(types, ::testing::UnorderedElementsAre("VirtualLsiLogicSASController",
                                                     "VirtualE1000e", "VirtualVmxnet3"));
  EXPECT_EQ(slot, "224");

  // installTimeoutSeconds: the VM is powered on and nothing powers it off.
  const std::string stuck = p.request(
      "kairos-stuck",
      R"({"rootFolder":"banlieue-templates","disk":{"size":1},"installTimeoutSeconds":1})");
  phases.clear();
  auto waiting = importUntil(p, stuck, phases, "Installing");
  ASSERT_EQ(waiting.reason, "Installing") << waiting.message;
  sdk::abi::CallOutcome timed_out = waiting;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (timed_out.code == BANLIEUE_IN_PROGRESS && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    timed_out = p.driver().once("import_image", "", PluginImport::kUid, stuck);
  }
  EXPECT_EQ(timed_out.code, BANLIEUE_FAILED_PRECONDITION) << timed_out.message;
  EXPECT_EQ(timed_out.reason, "InstallTimedOut");
  EXPECT_THAT(timed_out.message, HasSubstr("within 1 s"));
}

// forceCreate: the template an earlier import made (another artifact, or before another
// banlieue.io/force-reimport value) is destroyed and made again; without it, or within the same
// import, the template there is adopted.
TEST(ImageImportVsphereTest, ForceCreateReplacesAnEarlierImportsTemplate) {
  vsphere::testing::Vcsim vcsim;
  PluginImport p(vcsim);
  const std::string plain = R"({"rootFolder":"banlieue-templates","installMode":"deferred"})";
  const std::string forced =
      R"({"rootFolder":"banlieue-templates","installMode":"deferred","forceCreate":true})";
  std::vector<std::string> phases;
  ASSERT_TRUE(importUntil(p, p.request("kairos-fc", plain), phases).ok());
  const vsphere::MoRef first = p.backend().find(p.templatePath("kairos-fc"));
  ASSERT_FALSE(first.empty());
  ASSERT_TRUE(importUntil(p, p.request("kairos-fc", plain), phases).ok());
  EXPECT_EQ(p.backend().find(p.templatePath("kairos-fc")).value, first.value)
      << "adopted without forceCreate";

  // forceCreate within the import that made the template (same artifact, the annotation's value
  // unchanged: blanks are none, as for the provider runtime) adopts it.
  ASSERT_TRUE(importUntil(p,
                          p.request("kairos-fc", forced, R"({"banlieue.io/force-reimport":"  "})"),
                          phases)
                  .ok());
  EXPECT_EQ(p.backend().find(p.templatePath("kairos-fc")).value, first.value)
      << "forceCreate rebuilt the template of the same import";

  const std::string again = p.request("kairos-fc", forced, R"({"banlieue.io/force-reimport":"1"})");
  auto replaced = importUntil(p, again, phases);
  ASSERT_TRUE(replaced.ok()) << replaced.reason << ": " << replaced.message;
  const vsphere::MoRef second = p.backend().find(p.templatePath("kairos-fc"));
  ASSERT_FALSE(second.empty());
  EXPECT_NE(second.value, first.value) << "forceCreate adopted the earlier import's template";
  auto live = p.backend().vm("kairos-fc", {"config.template"});
  EXPECT_TRUE(live && live->boolean("config.template"));
  // The same import asked again: its own template is the answer, not rebuilt for ever.
  ASSERT_TRUE(importUntil(p, again, phases).ok());
  EXPECT_EQ(p.backend().find(p.templatePath("kairos-fc")).value, second.value);
}

// retainOnDelete: delete_image leaves the template and its ISO and says OK.
TEST(ImageImportVsphereTest, RetainOnDeleteKeepsTheTemplateAndItsIso) {
  vsphere::testing::Vcsim vcsim;
  PluginImport p(vcsim);
  const std::string tmpl = R"({"rootFolder":"banlieue-templates","installMode":"deferred"})";
  std::vector<std::string> phases;
  ASSERT_TRUE(importUntil(p, p.request("kairos-keep", tmpl), phases).ok());
  const std::string iso = vsphere::isoDatastorePath("kairos-keep", PluginImport::kSha);
  auto iso_kept = [&] {
    for (const auto& [name, ds] : datastores(p.backend())) {
      if (fs::exists(fs::path(ds.url) / iso)) return true;
    }
    return false;
  };
  ASSERT_TRUE(iso_kept());

  auto kept = p.driver().drive(
      "delete_image", "", PluginImport::kUid,
      PluginImport::removal(
          "kairos-keep",
          R"({"rootFolder":"banlieue-templates","installMode":"deferred","retainOnDelete":true})"));
  EXPECT_TRUE(kept.ok()) << kept.reason << ": " << kept.message;
  EXPECT_FALSE(p.backend().find(p.templatePath("kairos-keep")).empty());
  EXPECT_TRUE(iso_kept());

  // Without it the same call removes both: the test above would catch a no-op.
  auto removed = p.driver().drive("delete_image", "", PluginImport::kUid,
                                  PluginImport::removal("kairos-keep", tmpl));
  EXPECT_TRUE(removed.ok()) << removed.reason << ": " << removed.message;
  EXPECT_TRUE(p.backend().find(p.templatePath("kairos-keep")).empty());
  EXPECT_FALSE(iso_kept());
}

}  // namespace
}  // namespace banlieue::roles::images
