// The image pipeline's pure parts (issue #11): the cloudConfigs deep merge, checksum parsing and
// verification, the build plan and OSArtifact/Secret/status documents, the import Job manifest
// and the Job -> zone row mapping with its exit-status table. Labels: unit;images.
#include "host/api/codec.h"
#include "host/common/base64.h"
#include "host/plugin/payload_schemas.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/checksum_job.h"
#include "host/roles/images/cloud_config_merge.h"
#include "host/roles/images/image_import_command.h"
#include "host/roles/images/import_exit.h"
#include "host/roles/images/import_job.h"
#include "host/roles/images/os_artifact.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace banlieue::roles::images {
namespace {

namespace fs = std::filesystem;
namespace json = sdk::json;
using ::testing::HasSubstr;

rapidjson::Document parse(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << text;
  return doc;
}

// ---- cloudConfigs merge ------------------------------------------------------------------

TEST(CloudConfigMerge, MapsMergeListsConcatenateScalarsOverride) {
  auto merged = mergeCloudConfigs({
      {"base",
       "#cloud-config\nhostname: base\ninstall:\n  device: auto\n  poweroff: false\n"
       "users:\n- name: kairos\n  groups: [admin]\nstages:\n  boot:\n  - name: one\n"},
      {"site",
       "install:\n  poweroff: true\n  reboot: false\nusers:\n- name: ops\n"
       "stages:\n  boot:\n  - name: two\n  after-install-chroot:\n  - name: wipe\n"},
  });
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->rfind("#cloud-config\n", 0), 0u) << *merged;
  YAML::Node doc = YAML::Load(*merged);
  EXPECT_EQ(doc["hostname"].as<std::string>(), "base");
  EXPECT_EQ(doc["install"]["device"].as<std::string>(), "auto");
  EXPECT_TRUE(doc["install"]["poweroff"].as<bool>());
  EXPECT_FALSE(doc["install"]["reboot"].as<bool>());
  ASSERT_EQ(doc["users"].size(), 2u);
  EXPECT_EQ(doc["users"][0]["name"].as<std::string>(), "kairos");
  EXPECT_EQ(doc["users"][0]["groups"][0].as<std::string>(), "admin");
  EXPECT_EQ(doc["users"][1]["name"].as<std::string>(), "ops");
  ASSERT_EQ(doc["stages"]["boot"].size(), 2u);
  EXPECT_EQ(doc["stages"]["boot"][1]["name"].as<std::string>(), "two");
  EXPECT_EQ(doc["stages"]["after-install-chroot"][0]["name"].as<std::string>(), "wipe");
}

TEST(CloudConfigMerge, LaterScalarWinsAndOrderMatters) {
  auto ab = mergeCloudConfigs({{"a", "hostname: a\n"}, {"b", "hostname: b\n"}});
  auto ba = mergeCloudConfigs({{"b", "hostname: b\n"}, {"a", "hostname: a\n"}});
  ASSERT_TRUE(ab.ok() && ba.ok());
  EXPECT_EQ(YAML::Load(*ab)["hostname"].as<std::string>(), "b");
  EXPECT_EQ(YAML::Load(*ba)["hostname"].as<std::string>(), "a");
}

TEST(CloudConfigMerge, TypeMismatchIsAClearErrorNamingKeyAndLayer) {
  auto merged = mergeCloudConfigs({{"cloudConfigs[0] (Secret base)", "install:\n  device: auto\n"},
                                   {"cloudConfigs[1] (Secret bad)", "install:\n- device\n"}});
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.status().reason(), "CloudConfigConflict");
  EXPECT_THAT(merged.status().message(), HasSubstr("cloudConfigs[1] (Secret bad)"));
  EXPECT_THAT(merged.status().message(), HasSubstr("'install'"));
  EXPECT_THAT(merged.status().message(), HasSubstr("a list here but a map"));

  auto nested = mergeCloudConfigs({{"a", "stages:\n  boot: []\n"}, {"b", "stages:\n  boot: x\n"}});
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.status().message(), HasSubstr("'stages.boot'"));
  EXPECT_THAT(nested.status().message(), HasSubstr("a scalar here but a list"));

  auto scalar_over_map = mergeCloudConfigs({{"a", "k: {x: 1}\n"}, {"b", "k: 3\n"}});
  ASSERT_FALSE(scalar_over_map.ok());
  EXPECT_EQ(scalar_over_map.status().reason(), "CloudConfigConflict");
}

TEST(CloudConfigMerge, NullHoldsNoOpinionAndEmptyLayersAddNothing) {
  auto merged = mergeCloudConfigs({{"a", "install:\n  device: auto\nusers:\n"},
                                   {"empty", ""},
                                   {"comment", "#cloud-config\n"},
                                   {"b", "install:\nusers:\n- name: x\n"}});
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  YAML::Node doc = YAML::Load(*merged);
  EXPECT_EQ(doc["install"]["device"].as<std::string>(), "auto");
  ASSERT_EQ(doc["users"].size(), 1u);
}

TEST(CloudConfigMerge, NonMapOrNonYamlLayersAreRefused) {
  auto list = mergeCloudConfigs({{"cloudConfigs[0]", "- a\n- b\n"}});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().reason(), "CloudConfigInvalid");
  EXPECT_THAT(list.status().message(), HasSubstr("cloudConfigs[0] must be a YAML map"));
  auto broken = mergeCloudConfigs({{"cloudConfigs[2]", "a: [unclosed\n"}});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().reason(), "CloudConfigInvalid");
  EXPECT_THAT(broken.status().message(), HasSubstr("cloudConfigs[2] is not YAML"));
}

// YAML allows an implicit key ("key: value") at most 1024 characters, and the emitter's escapes
// lengthen a key (a NUL is written as four). A long key must come out as one a reader takes back
// (found by cloud_config_fuzz: 200 NULs in a quoted key).
TEST(CloudConfigMerge, AKeyLongerOnceEscapedStillReadsBack) {
  std::string nuls(300, '\0');
  std::string long_key = "quot" + nuls + "ot";
  std::string layer = "\"quot" + std::string(300, '\0') + "ot\": 1\nplain: 2\n";
  std::string long_plain(1500, 'k');
  // A key of 1,500 characters is only YAML when written explicitly ("? key" then ": value").
  auto merged = mergeCloudConfigs({{"a", layer}, {"b", "? " + long_plain + "\n: 3\n"}});
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  YAML::Node back;
  ASSERT_NO_THROW(back = YAML::Load(*merged)) << *merged;
  ASSERT_TRUE(back.IsMap());
  EXPECT_EQ(back.size(), 3u);
  EXPECT_EQ(back[long_key].as<int>(), 1);
  EXPECT_EQ(back["plain"].as<int>(), 2);
  EXPECT_EQ(back[long_plain].as<int>(), 3);
}

TEST(CloudConfigMerge, LayersAreNotModified) {
  // The merge copies: a list taken from the first layer must not grow in later merges.
  std::vector<CloudConfigLayer> layers = {{"a", "users:\n- name: a\n"},
                                          {"b", "users:\n- name: b\n"}};
  auto first = mergeCloudConfigs(layers);
  auto second = mergeCloudConfigs(layers);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(YAML::Load(*second)["users"].size(), 2u);
}

// ---- checksums ------------------------------------------------------------------------------

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    path_ = fs::temp_directory_path() /
            ("banlieue-images-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { fs::remove(path_); }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// sha256("abc") and sha512("abc") (FIPS 180-2 test vectors).
constexpr const char* kAbcSha256 =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kAbcSha512 =
    "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feeb"
    "bd"
    "454d4423643ce80e2a9ac94fa54ca49f";

TEST(ArtifactChecksum, ParsesSha256AndSha512AndNormalisesCase) {
  auto c = parseChecksum(std::string("sha256:") + kAbcSha256);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->algorithm, "sha256");
  std::string upper_hex = kAbcSha512;
  for (auto& ch : upper_hex) ch = static_cast<char>(std::toupper(ch));
  auto upper = parseChecksum("sha512:" + upper_hex);
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(upper->hex, kAbcSha512);
}

TEST(ArtifactChecksum, RefusesWhatItCannotVerify) {
  EXPECT_EQ(parseChecksum("").status().reason(), "ChecksumMissing");
  EXPECT_EQ(parseChecksum("md5:900150983cd24fb0d6963f7d28e17f72").status().reason(),
            "ChecksumAlgorithmUnsupported");
  EXPECT_EQ(parseChecksum("sha1:a9993e364706816aba3e25717850c26c9cd0d89d").status().reason(),
            "ChecksumAlgorithmUnsupported");
  EXPECT_EQ(parseChecksum(kAbcSha256).status().reason(), "ChecksumMalformed");
  EXPECT_EQ(parseChecksum("sha256:abc").status().reason(), "ChecksumMalformed");
  std::string bad = std::string("sha256:") + kAbcSha256;
  bad.back() = 'z';
  EXPECT_EQ(parseChecksum(bad).status().reason(), "ChecksumMalformed");
}

TEST(ArtifactChecksum, VerifiesAndDetectsAOneByteFlip) {
  TempFile good("abc");
  EXPECT_TRUE(verifyChecksum(good.path(), {"sha256", kAbcSha256}).isOk());
  EXPECT_TRUE(verifyChecksum(good.path(), {"sha512", kAbcSha512}).isOk());
  TempFile flipped("abd");
  auto s = verifyChecksum(flipped.path(), {"sha256", kAbcSha256});
  EXPECT_EQ(s.reason(), "ChecksumMismatch");
  EXPECT_THAT(s.message(), HasSubstr(kAbcSha256));
  EXPECT_EQ(verifyChecksum("/nonexistent/artifact.raw", {"sha256", kAbcSha256}).reason(),
            "ArtifactUnreadable");
  std::atomic<bool> cancel{true};
  EXPECT_EQ(verifyChecksum(good.path(), {"sha256", kAbcSha256}, {}, &cancel).code(),
            Code::kCancelled);
}

TEST(ArtifactChecksum, ReportsProgressOverLargeFiles) {
  TempFile big(std::string((size_t{3} << 20) + 17, 'x'));
  uint64_t last = 0, total = 0;
  int calls = 0;
  auto digest = fileDigest(big.path(), "sha256", [&](uint64_t done, uint64_t t) {
    EXPECT_GE(done, last);
    last = done;
    total = t;
    ++calls;
  });
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(last, total);
  EXPECT_EQ(total, (uint64_t{3} << 20) + 17);
  EXPECT_GE(calls, 4);
}

// ---- build plan and documents --------------------------------------------------------------

api::VMImage image(const std::string& yaml_sources, const std::string& extra = "") {
  std::string text = R"({"apiVersion":"banlieue.io/v1alpha1","kind":"VMImage",
    "metadata":{"name":"kairos-ubuntu","uid":"u-1"},"spec":{"architecture":"arm64","sources":)" +
                     yaml_sources + extra + "}}";
  auto decoded = api::fromJson<api::VMImage>(text);
  EXPECT_TRUE(decoded.ok()) << decoded.status().message();
  return decoded.ok() ? *decoded : api::VMImage{};
}

TEST(BuildPlan, PicksTheFirstUrlSourceAndTheArtifactKindPerBackend) {
  auto vsphere = planBuild(image(
      R"([{"providerClass":"libvirt","kind":"BackingFile","ref":"x"},
          {"providerClass":"vsphere","kind":"Url","ref":"","importFrom":"quay.io/k/ubuntu:1"}])",
      R"(,"cloudConfigs":[{"secretRef":{"name":"a"}}])"));
  ASSERT_TRUE(vsphere.ok());
  EXPECT_EQ(vsphere->kind, "iso");
  EXPECT_EQ(vsphere->import_from, "quay.io/k/ubuntu:1");
  EXPECT_EQ(vsphere->arch, "arm64");
  EXPECT_TRUE(vsphere->merge_cloud_config);

  auto libvirt = planBuild(image(
      R"([{"providerClass":"libvirt","kind":"Url","ref":"","importFrom":"o","checksum":"sha256:00"}])"));
  ASSERT_TRUE(libvirt.ok());
  EXPECT_EQ(libvirt->kind, "cloudImage");
  EXPECT_EQ(libvirt->source_checksum, "sha256:00");
  EXPECT_FALSE(libvirt->merge_cloud_config);
  auto proxmox =
      planBuild(image(R"([{"providerClass":"proxmox","kind":"Url","ref":"","importFrom":"o"}])"));
  EXPECT_EQ(proxmox->kind, "cloudImage");
  auto deferred =
      planBuild(image(R"([{"providerClass":"libvirt","kind":"Url","ref":"","importFrom":"o"}])",
                      R"(,"template":{"installMode":"deferred"})"));
  EXPECT_EQ(deferred->kind, "iso");

  EXPECT_EQ(planBuild(image(R"([{"providerClass":"libvirt","kind":"Template","ref":"t"}])"))
                .status()
                .reason(),
            "NoUrlSource");
  auto no_from = planBuild(image(R"([{"providerClass":"vsphere","kind":"Url","ref":""}])"));
  EXPECT_EQ(no_from.status().reason(), "ImportFromMissing");
}

TEST(BuildPlan, OsArtifactRequestsTheRightBuildAndIsOwnedByTheImage) {
  auto img =
      image(R"([{"providerClass":"vsphere","kind":"Url","ref":"","importFrom":"quay.io/k/u:1"}])",
            R"(,"cloudConfigs":[{"secretRef":{"name":"a"}}])");
  auto plan = planBuild(img);
  ASSERT_TRUE(plan.ok());
  auto doc = parse(osArtifactManifest(img, *plan, "banlieue-imagebuild"));
  EXPECT_EQ(json::stringOr(&doc, "apiVersion"), "build.kairos.io/v1alpha2");
  EXPECT_EQ(json::stringOr(&doc, "metadata.name"), "kairos-ubuntu-build");
  EXPECT_EQ(json::stringOr(&doc, "metadata.namespace"), "banlieue-imagebuild");
  EXPECT_EQ(json::stringOr(&doc, "spec.image.ref"), "quay.io/k/u:1");
  EXPECT_TRUE(json::boolean(&doc, "spec.artifacts.iso"));
  EXPECT_FALSE(json::boolean(&doc, "spec.artifacts.cloudImage"));
  EXPECT_EQ(json::stringOr(&doc, "spec.artifacts.arch"), "arm64");
  EXPECT_EQ(json::stringOr(&doc, "spec.artifacts.cloudConfigRef.name"),
            "kairos-ubuntu-cloud-config-merged");
  EXPECT_EQ(json::stringOr(&doc, "spec.artifacts.cloudConfigRef.key"), "cloud-config.yaml");
  const auto& owner = doc["metadata"]["ownerReferences"][0];
  EXPECT_EQ(json::stringOr(&owner, "kind"), "VMImage");
  EXPECT_EQ(json::stringOr(&owner, "uid"), "u-1");
  EXPECT_TRUE(json::boolean(&owner, "controller"));
  EXPECT_FALSE(json::boolean(&owner, "blockOwnerDeletion", true));
  EXPECT_EQ(doc["metadata"]["annotations"]["banlieue.io/vmimage"].GetString(),
            std::string("kairos-ubuntu"));

  // The spec hash changes with what kairos builds, and only then.
  auto other = img;
  other.spec.sources[0].import_from = "quay.io/k/u:2";
  EXPECT_NE(buildSpecHash(img, *plan), buildSpecHash(other, *planBuild(other)));
  EXPECT_EQ(buildSpecHash(img, *plan), buildSpecHash(img, *planBuild(img)));

  auto secret = parse(mergedSecretManifest(img, "ns", "#cloud-config\na: 1\n"));
  auto data = common::decodeBase64(secret["data"]["cloud-config.yaml"].GetString());
  ASSERT_TRUE(data.has_value());
  EXPECT_EQ(*data, "#cloud-config\na: 1\n");
}

// spec.isoOverlay: a Secret volume of the declared files, copied out of the Secret mount by an
// importer (kairos does not follow a Secret mount's symlinks), the copy as overlayISOVolume.
TEST(BuildPlan, IsoOverlayIsAVolumeOfTheDeclaredFilesGivenToTheIsoBuild) {
  auto img = image(R"([{"providerClass":"vsphere","kind":"Url","ref":"","importFrom":"o"}])",
                   R"(,"isoOverlay":{"secretRef":{"name":"extras"},"files":[)"
                   R"({"key":"motd","path":"/etc/motd"},{"key":"ca.pem","path":"certs/ca.pem"}]})");
  auto plan = planBuild(img);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->kind, "iso");
  EXPECT_EQ(plan->secret_keys_needed.at("extras"), (std::vector<std::string>{"motd", "ca.pem"}));
  auto doc = parse(osArtifactManifest(img, *plan, "banlieue-imagebuild"));
  EXPECT_TRUE(json::boolean(&doc, "spec.artifacts.iso"));
  EXPECT_EQ(json::stringOr(&doc, "spec.artifacts.overlayISOVolume"), "iso-overlay");
  const auto& volumes = doc["spec"]["volumes"];
  ASSERT_EQ(volumes.Size(), 2u) << json::serialize(doc);
  EXPECT_EQ(json::stringOr(&volumes[0], "name"), "iso-overlay-source");
  EXPECT_EQ(json::stringOr(&volumes[0], "secret.secretName"), "extras");
  const auto& items = volumes[0]["secret"]["items"];
  ASSERT_EQ(items.Size(), 2u);
  EXPECT_EQ(json::stringOr(&items[0], "key"), "motd");
  EXPECT_EQ(json::stringOr(&items[0], "path"), "etc/motd");  // relative to the ISO root
  EXPECT_EQ(json::stringOr(&items[1], "path"), "certs/ca.pem");
  EXPECT_EQ(json::stringOr(&volumes[1], "name"), "iso-overlay");
  EXPECT_TRUE(json::find(&volumes[1], "emptyDir") != nullptr);
  const auto& importer = doc["spec"]["importers"][0];
  EXPECT_EQ(json::stringOr(&importer, "name"), "iso-overlay-materialize");
  EXPECT_EQ(importer["volumeMounts"].Size(), 2u);
  EXPECT_FALSE(json::boolean(&importer["volumeMounts"][0], "readOnly") &&
               json::boolean(&importer["volumeMounts"][1], "readOnly"))
      << "the copy must be writable";
  // The overlay shapes the build: a different file list is a different build.
  auto other = img;
  other.spec.iso_overlay->files.pop_back();
  EXPECT_NE(buildSpecHash(img, *plan), buildSpecHash(other, *planBuild(other)));

  // A cloud-image build has no ISO to lay files on; a path leaving the ISO is refused.
  auto disk = image(R"([{"providerClass":"libvirt","kind":"Url","ref":"","importFrom":"o"}])",
                    R"(,"isoOverlay":{"secretRef":{"name":"extras"}})");
  EXPECT_EQ(planBuild(disk).status().reason(), "IsoOverlayInvalid");
  auto escape = image(R"([{"providerClass":"vsphere","kind":"Url","ref":"","importFrom":"o"}])",
                      R"(,"isoOverlay":{"secretRef":{"name":"x"},"files":[)"
                      R"({"key":"k","path":"../../etc/passwd"}]})");
  EXPECT_EQ(planBuild(escape).status().reason(), "IsoOverlayInvalid");
}

// spec.trustedBoot: a signed UKI ISO instead of a plain one, keys from the named Secret's six
// fixed files; never together with an overlay.
TEST(BuildPlan, TrustedBootRequestsAUkiIsoWithTheKeysVolume) {
  auto img = image(R"([{"providerClass":"vsphere","kind":"Url","ref":"","importFrom":"o"}])",
                   R"(,"trustedBoot":{"secretRef":{"name":"sb-keys"}})");
  auto plan = planBuild(img);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->secret_keys_needed.at("sb-keys"),
            (std::vector<std::string>{"PK.auth", "KEK.auth", "db.auth", "db.key", "db.pem",
                                      "tpm2-pcr-private.pem"}));
  auto doc = parse(osArtifactManifest(img, *plan, "banlieue-imagebuild"));
  EXPECT_FALSE(json::boolean(&doc, "spec.artifacts.iso")) << "a UKI ISO, not a plain one";
  EXPECT_TRUE(json::boolean(&doc, "spec.artifacts.uki.iso"));
  EXPECT_EQ(json::stringOr(&doc, "spec.artifacts.uki.keysVolume"), "trusted-boot-keys");
  EXPECT_EQ(json::stringOr(&doc["spec"]["volumes"][0], "name"), "trusted-boot-keys");
  EXPECT_EQ(json::stringOr(&doc["spec"]["volumes"][0], "secret.secretName"), "sb-keys");
  auto plain = image(R"([{"providerClass":"vsphere","kind":"Url","ref":"","importFrom":"o"}])");
  EXPECT_NE(buildSpecHash(img, *plan), buildSpecHash(plain, *planBuild(plain)));

  auto both = image(R"([{"providerClass":"vsphere","kind":"Url","ref":"","importFrom":"o"}])",
                    R"(,"trustedBoot":{"secretRef":{"name":"sb-keys"}},)"
                    R"("isoOverlay":{"secretRef":{"name":"extras"}})");
  auto refused = planBuild(both);
  EXPECT_EQ(refused.status().reason(), "TrustedBootWithIsoOverlay");
  EXPECT_THAT(refused.status().message(), HasSubstr("isoOverlay"));
}

// What the imagebuilder may learn of a Secret it names in a build: which keys exist. The
// values are never part of the answer.
TEST(BuildPlan, MissingSecretKeysAreNamedWithoutTheirValues) {
  auto secret = parse(R"({"metadata":{"name":"sb-keys"},"data":{"PK.auth":"c2VjcmV0",)"
                      R"("db.key":"c2VjcmV0"}})");
  auto missing = missingSecretKeys(secret, {"PK.auth", "KEK.auth", "db.key"});
  EXPECT_EQ(missing, (std::vector<std::string>{"KEK.auth"}));
  EXPECT_TRUE(missingSecretKeys(secret, {"PK.auth"}).empty());
}

TEST(BuildPlan, KairosPhasesMapOntoBuildArtifact) {
  BuildPlan plan;
  plan.kind = "cloudImage";
  auto phase = [&](const std::string& kairos, const std::string& message = "") {
    auto doc = parse(R"({"metadata":{"name":"img-build","uid":"osa-1"},"status":{"phase":")" +
                     kairos + R"(","message":")" + message + R"("}})");
    return buildArtifactFrom(doc, plan);
  };
  EXPECT_EQ(phase("").phase, "Pending");
  EXPECT_EQ(phase("Pending").reason, "Pending");
  EXPECT_EQ(phase("Building").phase, "Building");
  EXPECT_EQ(phase("Exporting").phase, "Building");
  auto ready = phase("Ready");
  EXPECT_EQ(ready.phase, "Ready");
  EXPECT_EQ(ready.reason, "Reconciled");
  EXPECT_EQ(ready.file, "img-build.raw");
  EXPECT_EQ(ready.pvc_ref, "img-build-artifacts");
  EXPECT_EQ(ready.os_artifact_uid, "osa-1");
  auto failed = phase("Error", "export job failed");
  EXPECT_EQ(failed.phase, "Failed");
  EXPECT_EQ(failed.reason, "BuildFailed");
  EXPECT_EQ(failed.message, "export job failed");
  plan.kind = "iso";
  EXPECT_EQ(phase("Ready").file, "img-build.iso");
}

TEST(BuildPlan, StatusApplyCarriesOnlyBuildArtifact) {
  api::BuildArtifact b;
  b.kind = "iso";
  b.phase = "Ready";
  b.checksum = "sha256:00";
  auto doc = parse(buildArtifactApply("img", b));
  EXPECT_EQ(json::stringOr(&doc, "metadata.name"), "img");
  ASSERT_TRUE(doc["status"].IsObject());
  EXPECT_EQ(doc["status"].MemberCount(), 1u);  // no perProvider, no conditions
  EXPECT_EQ(json::stringOr(&doc, "status.buildArtifact.checksum"), "sha256:00");
  EXPECT_FALSE(doc["status"]["buildArtifact"].HasMember("file"));  // empty fields left out
  EXPECT_FALSE(doc.HasMember("spec"));
}

// ---- import Job -----------------------------------------------------------------------------

ImportJobParams params() {
  ImportJobParams p;
  p.image_name = "kairos-ubuntu";
  p.provider_namespace = "infra";
  p.provider_name = "lv1";
  p.backend = "libvirt";
  p.failure_domain = "host-a";
  p.artifact_file = "kairos-ubuntu-build.raw";
  p.artifact_format = "raw";
  p.checksum = std::string("sha256:") + kAbcSha256;
  p.pvc_name = "kairos-ubuntu-build-artifacts";
  p.os_artifact_name = "kairos-ubuntu-build";
  p.os_artifact_uid = "osa-1";
  p.image_uid = "img-1";
  return p;
}

// ---- the checksum Job (docs/adr/0052) -----------------------------------------------------

ChecksumJobParams checksumParams() {
  ChecksumJobParams p;
  p.image_name = "kairos-ubuntu";
  p.image_uid = "u-1";
  p.os_artifact_name = "kairos-ubuntu-build";
  p.os_artifact_uid = "osa-1";
  p.pvc_name = "kairos-ubuntu-build-artifacts";
  p.artifact_file = "kairos-ubuntu-build.iso";
  p.job_namespace = "banlieue-imagebuild";
  p.container_image = "localhost/banlieue:1.0";
  return p;
}

TEST(ChecksumJob, HashesTheArtifactReadOnlyWithoutAnyApiAccess) {
  auto manifest = checksumJob(checksumParams());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  auto doc = parse(*manifest);
  EXPECT_EQ(json::stringOr(&doc, "metadata.namespace"), "banlieue-imagebuild");
  EXPECT_EQ(json::stringOr(&doc, "metadata.name"), checksumJobName(checksumParams()));
  EXPECT_EQ(doc["metadata"]["annotations"]["banlieue.io/vmimage"].GetString(),
            std::string("kairos-ubuntu"));
  EXPECT_EQ(doc["metadata"]["labels"]["app.kubernetes.io/component"].GetString(),
            std::string("artifact-checksum"));
  const auto& owners = doc["metadata"]["ownerReferences"];
  ASSERT_EQ(owners.Size(), 2u);
  EXPECT_EQ(json::stringOr(&owners[1], "kind"), "OSArtifact");
  EXPECT_EQ(json::stringOr(&owners[1], "uid"), "osa-1");
  const auto& pod = doc["spec"]["template"]["spec"];
  EXPECT_FALSE(json::boolean(&pod, "automountServiceAccountToken", true));
  EXPECT_TRUE(json::boolean(&pod, "securityContext.runAsNonRoot"));
  const auto& c = pod["containers"][0];
  EXPECT_TRUE(json::boolean(&c, "securityContext.readOnlyRootFilesystem"));
  EXPECT_EQ(std::string(c["securityContext"]["capabilities"]["drop"][0].GetString()), "ALL");
  std::vector<std::string> args;
  for (const auto& a : c["args"].GetArray()) args.emplace_back(a.GetString());
  EXPECT_THAT(
      args, ::testing::ElementsAre("--log-level", "info", "image-checksum", "--file",
                                   "/artifacts/kairos-ubuntu-build.iso", "--algorithm", "sha256"));
  EXPECT_TRUE(json::boolean(&c["volumeMounts"][0], "readOnly"));
  EXPECT_EQ(json::stringOr(&pod["volumes"][0], "persistentVolumeClaim.claimName"),
            "kairos-ubuntu-build-artifacts");
  EXPECT_TRUE(json::boolean(&pod["volumes"][0], "persistentVolumeClaim.readOnly"));

  // One Job per build: another OSArtifact (a rebuild) is another Job.
  auto rebuilt = checksumParams();
  rebuilt.os_artifact_uid = "osa-2";
  EXPECT_NE(checksumJobName(rebuilt), checksumJobName(checksumParams()));
  EXPECT_LE(checksumJobName(rebuilt).size(), 63u);

  auto escape = checksumParams();
  escape.artifact_file = "../etc/shadow";
  EXPECT_EQ(checksumJob(escape).status().reason(), "ChecksumJobInvalid");
  auto md5 = checksumParams();
  md5.algorithm = "md5";
  EXPECT_EQ(checksumJob(md5).status().reason(), "ChecksumJobInvalid");
}

TEST(ChecksumJob, TheDigestOrTheReasonComesFromTheTerminationMessage) {
  auto job = [](const std::string& status) { return parse(R"({"status":)" + status + "}"); };
  auto pod = [](const std::string& message) {
    return parse(R"({"status":{"containerStatuses":[{"name":"checksum","state":{"terminated":)"
                 R"({"exitCode":0,"message":)" +
                 json::serialize(parse("{\"m\":" + message + "}")["m"]) + "}}}]}}");
  };
  auto running = job(R"({"active":1})");
  EXPECT_EQ(checksumOutcome(running, nullptr).state, ChecksumOutcome::State::kRunning);

  auto complete = job(R"({"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]})");
  auto done_pod = pod(R"("{\"checksum\":\"sha256:abcd\"}")");
  auto done = checksumOutcome(complete, &done_pod);
  EXPECT_EQ(done.state, ChecksumOutcome::State::kSucceeded);
  EXPECT_EQ(done.checksum, "sha256:abcd");
  // Complete but silent is not a checksum: nothing is recorded, the row says why.
  auto silent = checksumOutcome(complete, nullptr);
  EXPECT_EQ(silent.state, ChecksumOutcome::State::kFailed);
  EXPECT_EQ(silent.reason, "ChecksumJobFailed");

  auto failed = job(R"({"failed":3,"conditions":[{"type":"Failed","status":"True",)"
                    R"("message":"Job has reached the specified backoff limit"}]})");
  auto missing_pod = pod(R"("{\"reason\":\"ArtifactMissing\",\"message\":\"no file\"}")");
  auto missing = checksumOutcome(failed, &missing_pod);
  EXPECT_EQ(missing.state, ChecksumOutcome::State::kFailed);
  EXPECT_EQ(missing.reason, "ArtifactMissing");
  EXPECT_EQ(missing.message, "no file");
  auto unknown = checksumOutcome(failed, nullptr);
  EXPECT_EQ(unknown.reason, "ChecksumJobFailed");
  EXPECT_THAT(unknown.message, HasSubstr("backoff limit"));
}

TEST(ImportJob, RunsImageImportForOneZoneIsolatedAndReadOnly) {
  auto manifest = importJob(params());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  auto job = parse(*manifest);
  EXPECT_EQ(json::stringOr(&job, "kind"), "Job");
  EXPECT_EQ(json::stringOr(&job, "metadata.namespace"), "banlieue-imagebuild");
  EXPECT_EQ(json::stringOr(&job, "metadata.name"), importJobName(params()));
  EXPECT_LE(importJobName(params()).size(), 63u);
  // Owned by the image and by the OSArtifact: deleting either collects the Job.
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["kind"].GetString(), std::string("VMImage"));
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["uid"].GetString(), std::string("img-1"));
  EXPECT_EQ(job["metadata"]["ownerReferences"][1]["kind"].GetString(), std::string("OSArtifact"));
  EXPECT_EQ(job["metadata"]["annotations"]["banlieue.io/import-base"].GetString(),
            importJobName(params()));
  EXPECT_FALSE(job["metadata"]["annotations"].HasMember("banlieue.io/force-reimport"));
  EXPECT_EQ(job["metadata"]["annotations"]["banlieue.io/failure-domain"].GetString(),
            std::string("host-a"));
  const auto& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(json::stringOr(&pod, "serviceAccountName"), "banlieue-image-import");
  EXPECT_EQ(json::stringOr(&pod, "restartPolicy"), "Never");
  // Non-root with the image's user and group: the image's /etc/passwd has no entry for 65532,
  // so without runAsGroup a container runtime would give the process group 0.
  EXPECT_TRUE(json::boolean(&pod, "securityContext.runAsNonRoot"));
  EXPECT_EQ(json::integer(&pod, "securityContext.runAsUser"), 65532);
  EXPECT_EQ(json::integer(&pod, "securityContext.runAsGroup"), 65532);
  EXPECT_EQ(json::stringOr(&pod, "securityContext.seccompProfile.type"), "RuntimeDefault");
  const auto& c = pod["containers"][0];
  EXPECT_EQ(json::stringOr(&c, "name"), "import");
  EXPECT_TRUE(json::boolean(&c, "securityContext.readOnlyRootFilesystem"));
  EXPECT_FALSE(json::boolean(&c, "securityContext.allowPrivilegeEscalation", true));
  std::vector<std::string> args;
  for (const auto& a : c["args"].GetArray()) args.emplace_back(a.GetString());
  auto after = [&](const std::string& flag) {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag) return args[i + 1];
    }
    return std::string("<missing>");
  };
  EXPECT_EQ(args[2], "image-import");
  EXPECT_EQ(after("--backend"), "libvirt");
  EXPECT_EQ(after("--provider"), "infra/lv1");
  EXPECT_EQ(after("--image"), "kairos-ubuntu");
  EXPECT_EQ(after("--failure-domain"), "host-a");
  EXPECT_EQ(after("--artifact"), "/artifacts/kairos-ubuntu-build.raw");
  EXPECT_EQ(after("--checksum"), params().checksum);
  // Credentials are read through the API under the Job's ServiceAccount: nothing is mounted
  // but the artifacts and a scratch /tmp.
  EXPECT_EQ(after("--credentials-dir"), "<missing>");
  ASSERT_EQ(pod["volumes"].Size(), 2u);
  // The artifacts come from the PVC, read-only; the only writable mount is /tmp, in memory (a
  // plugin's credential files for its backend's client library never reach a disk).
  std::map<std::string, std::string> mounted;
  for (const auto& m : c["volumeMounts"].GetArray()) {
    std::string name = json::stringOr(&m, "name");
    mounted[name] = json::stringOr(&m, "mountPath");
    EXPECT_EQ(json::boolean(&m, "readOnly"), name != "tmp") << name;
  }
  EXPECT_EQ(mounted,
            (std::map<std::string, std::string>{{"artifacts", "/artifacts"}, {"tmp", "/tmp"}}));
  bool pvc_ro = false;
  for (const auto& v : pod["volumes"].GetArray()) {
    if (json::stringOr(&v, "name") == "artifacts") {
      EXPECT_EQ(json::stringOr(&v, "persistentVolumeClaim.claimName"),
                "kairos-ubuntu-build-artifacts");
      pvc_ro = json::boolean(&v, "persistentVolumeClaim.readOnly");
    }
    if (json::stringOr(&v, "name") == "tmp") {
      EXPECT_EQ(json::stringOr(&v, "emptyDir.medium"), "Memory");
      EXPECT_FALSE(json::stringOr(&v, "emptyDir.sizeLimit").empty());
    }
  }
  EXPECT_TRUE(pvc_ro);
}

// The import Job reaches the backend as its provider does: through the same proxy (#25).
TEST(ImportJob, CarriesTheProvidersProxySettings) {
  auto p = params();
  p.proxy_env = {{"https_proxy", "http://proxy.example.test:3128"}, {"no_proxy", "10.0.0.0/8"}};
  auto manifest = importJob(p);
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  auto job = parse(*manifest);
  const auto& env = job["spec"]["template"]["spec"]["containers"][0]["env"];
  std::map<std::string, std::string> values;
  for (const auto& var : env.GetArray()) {
    values[json::stringOr(&var, "name")] = json::stringOr(&var, "value");
  }
  EXPECT_EQ(values["https_proxy"], "http://proxy.example.test:3128");
  EXPECT_EQ(values["no_proxy"], "10.0.0.0/8");
  EXPECT_EQ(parse(*importJob(params()))["spec"]["template"]["spec"]["containers"][0]["env"].Size(),
            2U);
}

TEST(ImportJob, NamesDifferPerZoneAndRebuildAndAreDnsSafe) {
  auto p = params();
  auto q = params();
  q.failure_domain = "host-b";
  EXPECT_NE(importJobName(p), importJobName(q));
  q = params();
  q.os_artifact_uid = "osa-2";
  EXPECT_NE(importJobName(p), importJobName(q));
  q = params();
  q.generation_suffix = "force-1";
  EXPECT_NE(importJobName(p), importJobName(q));
  // A forced Job still names the Job it replaces, so the runtime finds both.
  auto forced = parse(*importJob(q));
  EXPECT_EQ(forced["metadata"]["annotations"]["banlieue.io/import-base"].GetString(),
            importJobName(p));
  EXPECT_EQ(forced["metadata"]["annotations"]["banlieue.io/force-reimport"].GetString(),
            std::string("force-1"));
  q = params();
  q.image_name = std::string(200, 'A') + ".Weird_Name";
  std::string name = importJobName(q);
  EXPECT_LE(name.size(), 63u);
  for (char ch : name) EXPECT_TRUE(std::islower(ch) || std::isdigit(ch) || ch == '-') << name;
  auto job = parse(*importJob(q));
  std::string label = job["metadata"]["labels"]["banlieue.io/vmimage"].GetString();
  EXPECT_LE(label.size(), 63u);
}

// Per-target imports (libvirt's pools): one Job per (failure domain, target), each passing its
// target to image-import and saying it in an annotation; two targets are two Jobs.
TEST(ImportJob, OneJobPerTargetPassesTheTarget) {
  auto a = params();
  a.target = "pool-a";
  auto b = params();
  b.target = "pool-b";
  EXPECT_NE(importJobName(a), importJobName(b));
  EXPECT_NE(importJobName(a), importJobName(params()));
  for (const auto& p : {a, b}) {
    auto manifest = importJob(p);
    ASSERT_TRUE(manifest.ok()) << manifest.status().message();
    auto job = parse(*manifest);
    EXPECT_EQ(json::stringOr(&job, "metadata.name"), importJobName(p));
    const auto& annotations = job["metadata"]["annotations"];
    ASSERT_TRUE(annotations.HasMember("banlieue.io/import-target"));
    EXPECT_EQ(annotations["banlieue.io/import-target"].GetString(), p.target);
    EXPECT_EQ(annotations["banlieue.io/import-base"].GetString(), importJobName(p));
    EXPECT_EQ(annotations["banlieue.io/failure-domain"].GetString(), std::string("host-a"));
    std::vector<std::string> args;
    for (const auto& arg : job["spec"]["template"]["spec"]["containers"][0]["args"].GetArray()) {
      args.emplace_back(arg.GetString());
    }
    auto at = std::find(args.begin(), args.end(), "--target");
    ASSERT_NE(at, args.end()) << ::testing::PrintToString(args);
    ASSERT_NE(at + 1, args.end());
    EXPECT_EQ(*(at + 1), p.target);
  }
}

// Without a target the Job is the one made before per-target imports, name included: an
// upgrade does not replace the Jobs of vSphere, Proxmox or third-party backends.
TEST(ImportJob, WithoutATargetTheJobIsUnchanged) {
  EXPECT_EQ(importJobName(params()), "import-kairos-ubuntu-90fbbe6664");
  auto job = parse(*importJob(params()));
  EXPECT_FALSE(job["metadata"]["annotations"].HasMember("banlieue.io/import-target"));
  std::vector<std::string> args;
  for (const auto& arg : job["spec"]["template"]["spec"]["containers"][0]["args"].GetArray()) {
    args.emplace_back(arg.GetString());
  }
  EXPECT_THAT(args, ::testing::ElementsAre("--log-level", "info", "image-import", "--plugin-dir",
                                           "/usr/lib/banlieue/plugins", "--backend", "libvirt",
                                           "--provider", "infra/lv1", "--image", "kairos-ubuntu",
                                           "--failure-domain", "host-a", "--artifact",
                                           "/artifacts/kairos-ubuntu-build.raw", "--format", "raw",
                                           "--checksum", params().checksum));
}

TEST(ImportJob, RefusesIncompleteParameters) {
  auto p = params();
  p.checksum.clear();
  EXPECT_EQ(importJob(p).status().reason(), "ImportJobInvalid");
  EXPECT_THAT(importJob(p).status().message(), HasSubstr("checksum"));
  p = params();
  p.artifacts_host_path = "/srv/artifacts";
  EXPECT_FALSE(importJob(p).ok());  // both volume sources
  p.pvc_name.clear();
  auto host = importJob(p);
  ASSERT_TRUE(host.ok());
  EXPECT_THAT(*host, HasSubstr(R"("hostPath":{"path":"/srv/artifacts")"));
  p = params();
  p.artifact_file = "../etc/passwd";
  EXPECT_FALSE(importJob(p).ok());
}

std::string jobWith(const std::string& conditions, int failed = 0) {
  return R"({"status":{"failed":)" + std::to_string(failed) + R"(,"conditions":)" + conditions +
         "}}";
}
std::string podExited(int code, const std::string& message) {
  return R"({"status":{"containerStatuses":[{"name":"import","state":{"terminated":{"exitCode":)" +
         std::to_string(code) + R"(,"message":")" + message + R"("}}}]}})";
}

TEST(ImportOutcome, JobResultsBecomeZoneRows) {
  auto running = importOutcome(parse(jobWith("[]")), nullptr);
  EXPECT_EQ(running.state, ImportOutcome::State::kRunning);
  EXPECT_EQ(running.reason, "Importing");

  auto ok_pod = parse(podExited(
      0, R"({\"reason\":\"Imported\",\"message\":\"done\",\"resolvedRef\":\"img-ab.raw\"})"));
  auto ok = importOutcome(parse(jobWith(R"([{"type":"Complete","status":"True"}])")), &ok_pod);
  EXPECT_EQ(ok.state, ImportOutcome::State::kSucceeded);
  auto row = zoneRow("host-a", ok);
  EXPECT_TRUE(row.ready);
  EXPECT_EQ(row.name, "host-a");
  EXPECT_EQ(row.failure_domain, "");
  EXPECT_EQ(row.target, "");
  EXPECT_EQ(row.failureDomainName(), "host-a");
  EXPECT_EQ(row.reason, "Imported");
  EXPECT_EQ(row.resolved_ref, "img-ab.raw");
  // A per-target row is named <failureDomain>/<target> and carries both.
  auto pool_row = zoneRow("host-a", ok, "pool-b");
  EXPECT_TRUE(pool_row.ready);
  EXPECT_EQ(pool_row.name, "host-a/pool-b");
  EXPECT_EQ(pool_row.failure_domain, "host-a");
  EXPECT_EQ(pool_row.target, "pool-b");
  EXPECT_EQ(pool_row.failureDomainName(), "host-a");
  EXPECT_EQ(pool_row.resolved_ref, "img-ab.raw");
  EXPECT_EQ(zoneRowName("host-a", ""), "host-a");
  EXPECT_EQ(zoneRowName("host-a", "pool-b"), "host-a/pool-b");

  auto bad_pod = parse(podExited(10, R"({\"reason\":\"ChecksumMismatch\",\"message\":\"x\"})"));
  auto bad = importOutcome(
      parse(jobWith(R"([{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}])")),
      &bad_pod);
  EXPECT_EQ(bad.state, ImportOutcome::State::kFailed);
  EXPECT_EQ(bad.reason, "ChecksumMismatch");
  EXPECT_FALSE(bad.retryable);
  EXPECT_FALSE(zoneRow("host-a", bad).ready);

  // Without a termination message the exit status alone names the stage.
  auto plain_pod = parse(podExited(15, ""));
  auto plain = importOutcome(parse(jobWith(R"([{"type":"Failed","status":"True"}])")), &plain_pod);
  EXPECT_EQ(plain.reason, "ProviderConnectFailed");
  EXPECT_TRUE(plain.retryable);
  // A plugin's own reason refines the stage.
  auto plugin_pod = parse(podExited(16, R"({\"reason\":\"PoolNotFound\",\"message\":\"m\"})"));
  auto plugin =
      importOutcome(parse(jobWith(R"([{"type":"Failed","status":"True"}])")), &plugin_pod);
  EXPECT_EQ(plugin.reason, "PoolNotFound");
  EXPECT_EQ(plugin.message, "m");
  // A log tail (FallbackToLogsOnError) is a message, never a reason.
  auto log_pod = parse(podExited(1, "panic: something"));
  auto log = importOutcome(parse(jobWith(R"([{"type":"Failed","status":"True"}])")), &log_pod);
  EXPECT_EQ(log.reason, "ImportFailed");
  EXPECT_EQ(log.message, "panic: something");
  auto deadline = importOutcome(
      parse(jobWith(R"([{"type":"Failed","status":"True","reason":"DeadlineExceeded"}])")),
      nullptr);
  EXPECT_EQ(deadline.reason, "ImportTimedOut");
  auto retrying = importOutcome(parse(jobWith("[]", 1)), &plain_pod);
  EXPECT_EQ(retrying.state, ImportOutcome::State::kRunning);
  EXPECT_THAT(retrying.message, HasSubstr("ProviderConnectFailed"));
}

// A failure no retry can mend (the artifact does not match its checksum) is the outcome as soon
// as the first pod says so: the user does not wait out the Job's back-off (10 s, then 20 s)
// for the same answer.
// The import_image request image-import sends: the target only when the Job has one, so a
// plugin from before per-target imports reads the request it always read.
TEST(ImportRequest, CarriesTheTargetOnlyWhenThereIsOne) {
  ImportRequestFields f{.image_json = R"({"metadata":{"name":"kairos-ubuntu"}})",
                        .artifact_path = "/artifacts/a \"b\".raw",
                        .format = "raw",
                        .sha256 = kAbcSha256,
                        .size_bytes = 3,
                        .failure_domain = "host-a"};
  auto plain = parse(importImageRequest(f));
  EXPECT_TRUE(plugin::validatePayload("import_image.request", importImageRequest(f)).isOk());
  EXPECT_FALSE(plain.HasMember("target"));
  EXPECT_FALSE(plain.HasMember("operation"));
  EXPECT_EQ(json::stringOr(&plain, "artifact.path"), "/artifacts/a \"b\".raw");
  EXPECT_EQ(json::stringOr(&plain, "failureDomain"), "host-a");
  EXPECT_EQ(json::stringOr(&plain, "image.metadata.name"), "kairos-ubuntu");
  EXPECT_EQ(json::integer(&plain, "artifact.sizeBytes"), 3);

  f.target = "pool-b";
  f.token = "import-1";
  auto targeted = parse(importImageRequest(f));
  EXPECT_TRUE(plugin::validatePayload("import_image.request", importImageRequest(f)).isOk());
  EXPECT_EQ(json::stringOr(&targeted, "target"), "pool-b");
  EXPECT_EQ(json::stringOr(&targeted, "operation.token"), "import-1");
}

TEST(ImportOutcome, AFailureNoRetryMendsIsFinalAtTheFirstPod) {
  auto bad_pod = parse(podExited(10, R"({\"reason\":\"ChecksumMismatch\",\"message\":\"x\"})"));
  auto bad = importOutcome(parse(jobWith("[]", 1)), &bad_pod);
  EXPECT_EQ(bad.state, ImportOutcome::State::kFailed);
  EXPECT_EQ(bad.reason, "ChecksumMismatch");
  EXPECT_EQ(bad.message, "x");
  EXPECT_FALSE(bad.retryable);
  // A retryable one still waits for the Job's next attempt.
  auto connect_pod = parse(podExited(15, ""));
  EXPECT_EQ(importOutcome(parse(jobWith("[]", 1)), &connect_pod).state,
            ImportOutcome::State::kRunning);
}

TEST(ImportExit, EveryStatusHasAReasonAndRetryPolicy) {
  EXPECT_EQ(reasonForImportExit(kImportOk), "Imported");
  EXPECT_EQ(reasonForImportExit(kImportChecksumMismatch), "ChecksumMismatch");
  EXPECT_EQ(reasonForImportExit(kImportChecksumUnusable), "ChecksumUnusable");
  EXPECT_EQ(reasonForImportExit(kImportArtifactUnreadable), "ArtifactUnreadable");
  EXPECT_EQ(reasonForImportExit(kImportPluginLoadFailed), "PluginLoadFailed");
  EXPECT_EQ(reasonForImportExit(kImportRejected), "ImportRejected");
  EXPECT_EQ(reasonForImportExit(99), "ImportFailed");
  EXPECT_FALSE(importExitRetryable(kImportChecksumMismatch));
  EXPECT_FALSE(importExitRetryable(kImportRejected));
  EXPECT_TRUE(importExitRetryable(kImportRetryable));
  EXPECT_TRUE(importExitRetryable(kImportConnectFailed));
}

}  // namespace
}  // namespace banlieue::roles::images
