#include "host/roles/crdgen/crdgen_role.h"

#include "host/roles/bootstrap/plugin_discovery.h"
#include "host/roles/crdgen/render.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>

namespace banlieue::roles::crdgen {
namespace {

struct CrdgenFlags {
  std::string out;
  std::string deploy;
  std::string plugin_dir;
};

Status writeFile(const std::filesystem::path& file, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream stream(file, std::ios::trunc);
  stream << text;
  stream.close();
  if (ec || !stream) {
    return error(Code::kUnavailable, "WriteFailed", file.string() + ": could not be written");
  }
  return Status::ok();
}

// deploy/: crds/, install/banlieue.yaml and kustomization.yaml, stale CRD files removed.
int writeDeploy(const std::filesystem::path& dir,
                const std::vector<bootstrap::DiscoveredPlugin>& plugins) {
  auto files = renderCrdFiles(plugins);
  auto install = renderInstallManifest(plugins);
  auto components = renderClusterctlComponents(plugins);
  for (const Status& s : {files.status(), install.status(), components.status()}) {
    if (!s.isOk()) {
      std::cerr << "banlieue crdgen: " << s.message() << "\n";
      return app::kExitFailure;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir / "crds", ec);
  std::map<std::filesystem::path, std::string> outputs;
  for (const auto& [name, text] : *files) outputs[dir / "crds" / name] = text;
  outputs[dir / "install" / "banlieue.yaml"] = *install;
  outputs[dir / "kustomization.yaml"] = renderKustomization(*files);
  // One release directory: an older version's is removed, as clusterctl would pick it too.
  std::filesystem::remove_all(dir / "clusterctl", ec);
  const auto release = dir / clusterctlReleaseDirectory();
  outputs[release / "infrastructure-components.yaml"] = *components;
  outputs[release / "metadata.yaml"] = renderClusterctlMetadata();
  for (const auto& [file, text] : outputs) {
    if (auto s = writeFile(file, text); !s.isOk()) {
      std::cerr << "banlieue crdgen: " << s.message() << "\n";
      return app::kExitFailure;
    }
  }
  std::cerr << "banlieue crdgen: wrote " << files->size() << " CRDs, install/banlieue.yaml, "
            << "kustomization.yaml and " << clusterctlReleaseDirectory() << "/ to " << dir.string()
            << "\n";
  return app::kExitOk;
}

int runCrdgen(const CrdgenFlags& flags) {
  std::vector<bootstrap::DiscoveredPlugin> plugins;
  if (!flags.plugin_dir.empty()) {
    auto found = bootstrap::discoverPlugins(flags.plugin_dir, {.missing_ok = false});
    if (!found.ok()) {
      std::cerr << "banlieue crdgen: " << found.status().message() << "\n";
      return app::kExitFailure;
    }
    plugins = std::move(found).value();
  }
  if (!flags.deploy.empty()) return writeDeploy(flags.deploy, plugins);
  if (flags.out.empty()) {
    auto stream = renderCrdStream(plugins);
    if (!stream.ok()) {
      std::cerr << "banlieue crdgen: " << stream.status().message() << "\n";
      return app::kExitFailure;
    }
    std::cout << *stream;
    return std::cout.good() ? app::kExitOk : app::kExitFailure;
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) {
    std::cerr << "banlieue crdgen: " << flags.out << ": " << ec.message() << "\n";
    return app::kExitFailure;
  }
  auto files = renderCrdFiles(plugins);
  if (!files.ok()) {
    std::cerr << "banlieue crdgen: " << files.status().message() << "\n";
    return app::kExitFailure;
  }
  for (const auto& [name, text] : *files) {
    if (auto s = writeFile(std::filesystem::path(flags.out) / name, text); !s.isOk()) {
      std::cerr << "banlieue crdgen: " << s.message() << "\n";
      return app::kExitFailure;
    }
  }
  std::cerr << "banlieue crdgen: wrote " << files->size() << " CRDs to " << flags.out << "\n";
  return app::kExitOk;
}

}  // namespace

void registerCrdgenCommand(CLI::App& app, app::Action& action) {
  auto* sub = app.add_subcommand("crdgen", "Print the CRDs generated from the C++ API types");
  auto flags = std::make_shared<CrdgenFlags>();
  sub->add_option("--out", flags->out,
                  "Write one <group>_<plural>.yaml per CRD into this directory instead of stdout");
  sub->add_option("--deploy", flags->deploy,
                  "Regenerate a deploy directory: crds/, install/banlieue.yaml (bootstrap's "
                  "objects without CRDs), kustomization.yaml and clusterctl/ (Cluster API's "
                  "provider repository layout)");
  sub->add_option("--plugin-dir", flags->plugin_dir,
                  "Also emit the CRDs the plugins in this directory ship");
  sub->callback([&action, flags] { action = [flags] { return runCrdgen(*flags); }; });
}

}  // namespace banlieue::roles::crdgen
