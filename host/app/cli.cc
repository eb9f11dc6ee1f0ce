#include "host/app/cli.h"

#include "host/app/command.h"
#include "host/common/allocator_tuning.h"
#include "host/common/logging.h"
#include "host/common/version.h"
#include "host/roles/bootstrap/bootstrap_role.h"
#include "host/roles/controller/controller_role.h"
#include "host/roles/crdgen/crdgen_role.h"
#include "host/roles/images/image_checksum_command.h"
#include "host/roles/images/image_import_command.h"
#include "host/roles/images/imagebuilder_role.h"
#include "host/roles/operator/operator_role.h"
#include "host/roles/plugin/plugin_command.h"
#include "host/roles/provider/provider_command.h"
#include "host/roles/vm/vm_command.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <iostream>

namespace banlieue::app {

void buildCli(CLI::App& app, GlobalFlags& flags, Action& action) {
  app.description(
      "banlieue: one Kubernetes API for virtual machines on any hypervisor.\n"
      "One binary runs every role; backends are plugins loaded behind the banlieue_provider_v1 "
      "ABI.\n"
      "Commands are what you run: install banlieue, generate its CRDs, check a plugin, start, "
      "stop or restart a VM. In-cluster "
      "roles are what banlieue's Deployments and the pods its operator creates run; run one by "
      "hand only to develop or debug it.");
  app.name("banlieue");
  app.set_version_flag(
      "--version", fmt::format("banlieue {} (provider ABI {}.{})", kVersion, kAbiMajor, kAbiMinor));
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  app.add_option("--log-format", flags.log_format, "text or json (one JSON object per line)")
      ->capture_default_str();
  app.require_subcommand(1);
  // Inherited by every subcommand added below, nested ones too: an option a command does not
  // know is handed to its parent, so the global flags work after the command as well.
  app.fallthrough();
  // What the subcommands inherit as their help footer; the global flags are not in their lists.
  app.footer(
      "Global options --log-level and --log-format are accepted here too (see 'banlieue "
      "--help').");

  // Registration order is help order: the commands a person runs come first.
  roles::bootstrap::registerBootstrapCommand(app, action);
  roles::crdgen::registerCrdgenCommand(app, action);
  roles::plugin::registerPluginCommands(app, action);
  roles::vm::registerVmCommands(app, action);
  roles::controller::registerControllerCommand(app, action);
  roles::provider_operator::registerOperatorCommand(app, action);
  roles::provider::registerProviderCommand(app, action);
  roles::images::registerImageBuilderCommand(app, action);
  roles::images::registerImageImportCommand(app, action);
  roles::images::registerImageChecksumCommand(app, action);

  for (const char* name : {"bootstrap", "crdgen", "plugin", "vm"}) {
    app.get_subcommand(name)->group(kUserCommandsGroup);
  }
  for (const char* name :
       {"controller", "operator", "provider", "imagebuilder", "image-import", "image-checksum"}) {
    app.get_subcommand(name)->group(kInClusterRolesGroup);
  }
  app.footer(
      "Global options go before or after the command: 'banlieue controller --log-level debug' "
      "is 'banlieue --log-level debug controller'.\n"
      "Run 'banlieue <command> --help' for a command's options.");
}

int run(int argc, char** argv) {
  common::tuneAllocatorForServer();
  CLI::App app;
  GlobalFlags flags;
  Action action;
  buildCli(app, flags, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the message (or the help/version text) and returns CLI11's own code per
    // error kind (105 validation, 106 required, 109 extras...); the documented contract is one
    // usage-error code for all of them, so scripts need not know CLI11's table.
    const int cli11_code = app.exit(e);
    return cli11_code == static_cast<int>(CLI::ExitCodes::Success) ? kExitOk : kExitUsage;
  }
  const std::string& level_text = flags.log_level;
  const std::string& format_text = flags.log_format;
  auto level = common::parseLogLevel(level_text);
  auto format = common::parseLogFormat(format_text);
  if (!level || !format) {
    std::cerr << "banlieue: "
              << (!level ? "--log-level '" + level_text + "' is not a level"
                         : "--log-format '" + format_text + "' must be text or json")
              << "\n";
    return kExitUsage;
  }
  common::configureLogging(*level, *format);
  if (!action) {
    std::cerr << app.help();
    return kExitUsage;
  }
  return action();
}

}  // namespace banlieue::app
