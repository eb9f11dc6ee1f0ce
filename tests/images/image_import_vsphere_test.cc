// `banlieue image-import` of an ISO into vcsim through the vSphere plugin: the Provider and the
// credentials (a Secret-volume-like directory, one file per key) come from files, the VMImage
// asks for a deferred-install template so no installer has to run in the simulator. The ISO
// lands as a template in the zone's folder; a flipped byte is refused with ChecksumMismatch
// before the plugin is even loaded. Labels: integration;images.
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/import_exit.h"
#include "tests/support/build_paths.h"
#include "tests/support/local_cluster.h"
#include "tests/support/read_file.h"
#include "tests/vsphere/vcsim.h"

#include <banlieue/sdk/json.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace banlieue::roles::images
