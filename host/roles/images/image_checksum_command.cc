#include "host/roles/images/image_checksum_command.h"

#include "host/common/logging.h"
#include "host/roles/images/artifact_checksum.h"
#include "host/roles/images/import_exit.h"
#include "host/roles/images/import_progress.h"
#include "host/roles/images/termination_log.h"

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>

namespace banlieue::roles::images {
namespace {

namespace fs = std::filesystem;

// Named apart from image-import's options: the sanitizer presets are unity builds, where the
// two commands' anonymous namespaces share one translation unit.
struct ChecksumOptions {
  std::string file;
  std::string algorithm = "sha256";
  std::string termination_log = kDefaultTerminationLog;
};

int runChecksum(const ChecksumOptions& o) {
  std::error_code ec;
  auto fail = [&](const std::string& reason, const std::string& message) {
    spdlog::error("image-checksum failed ({}): {}", reason, message);
    writeTerminationLog(o.termination_log,
                        R"({"reason":")" + common::jsonEscape(reason) + R"(","message":")" +
                            common::jsonEscape(message.substr(0, kTerminationMessageTextLimit)) +
                            "\"}");
    return static_cast<int>(kImportArtifactUnreadable);
  };
  if (!fs::is_regular_file(o.file, ec)) {
    return fail("ArtifactMissing",
                "the build is Ready but " + o.file + " is not a file on the artifacts volume");
  }
  auto last = std::chrono::steady_clock::time_point{};
  auto digest = fileDigest(o.file, o.algorithm, [&](uint64_t done, uint64_t total) {
    auto now = std::chrono::steady_clock::now();
    if (done != total && now - last < std::chrono::seconds(3)) return;
    last = now;
    spdlog::info("{}", importProgressLine(importProgress("Hashing", done, total)));
  });
  if (!digest.ok()) return fail("ArtifactUnreadable", digest.status().message());
  std::string checksum = o.algorithm + ":" + *digest;
  spdlog::info("image-checksum: {} {}", o.file, checksum);
  writeTerminationLog(o.termination_log, R"({"checksum":")" + checksum + "\"}");
  return 0;
}

}  // namespace

void registerImageChecksumCommand(CLI::App& app, app::Action& action) {
  auto o = std::make_shared<ChecksumOptions>();
  auto* sub = app.add_subcommand(
      "image-checksum",
      "The digest of a built artifact, for the imagebuilder's checksum Job: printed, and written\n"
      "to the termination log as {\"checksum\":\"<alg>:<hex>\"}");
  sub->add_option("--file", o->file, "The artifact (read-only)")->required();
  sub->add_option("--algorithm", o->algorithm, "sha256 or sha512")
      ->check(CLI::IsMember({"sha256", "sha512"}))
      ->capture_default_str();
  sub->add_option("--termination-log", o->termination_log,
                  "Where the outcome is written as JSON for the Job's watcher")
      ->capture_default_str();
  sub->callback([&action, o] { action = [o] { return runChecksum(*o); }; });
}

}  // namespace banlieue::roles::images
