#pragma once

#include "host/app/command.h"

#include <string>

namespace banlieue::app {

// The flags every command takes, before or after its name: `banlieue --log-level debug
// controller` and `banlieue controller --log-level debug` are the same command.
struct GlobalFlags {
  std::string log_level = "info";
  std::string log_format = "text";
};

// The help groups of `banlieue --help`: what a person runs, and what banlieue's own Deployments
// and the pods the operator creates run.
inline constexpr const char* kUserCommandsGroup = "Commands";
inline constexpr const char* kInClusterRolesGroup = "In-cluster roles (what banlieue's pods run)";

// Declares the global flags and every command on `app`. Parsing fills `flags` and stores the
// chosen command in `action`; nothing runs.
void buildCli(CLI::App& app, GlobalFlags& flags, Action& action);

// Parses the command line, configures logging and runs the chosen role.
int run(int argc, char** argv);

}  // namespace banlieue::app
