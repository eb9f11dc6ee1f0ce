// Runs the real banlieue binary (BANLIEUE_BINARY) as a user would, for the abi tests that
// judge its exit code and output.
#pragma once

#include "tests/support/build_paths.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace banlieue::testing {

struct Run {
  int exit_code;
  std::string output;  // stdout and stderr
};

// `arguments` is appended to the command line as is (quote what needs it).
inline Run runBanlieue(const std::string& arguments) {
  std::string command = "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0 " +
                        std::string(BANLIEUE_BINARY) + " --log-level off " + arguments + " 2>&1";
  Run run{-1, {}};
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) run.output += buffer.data();
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// `banlieue plugin check` on one test plugin variant under BANLIEUE_TEST_PLUGIN_ROOT.
inline Run checkVariant(const std::string& variant, const std::string& extra = "") {
  return runBanlieue(std::string("plugin check ") + std::getenv("BANLIEUE_TEST_PLUGIN_ROOT") + "/" +
                     variant + " " + extra);
}

}  // namespace banlieue::testing
