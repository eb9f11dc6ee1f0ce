// How a role plugs into the command line: it registers its subcommand(s) on the CLI and,
// when one is chosen, stores what to run. main() only parses and dispatches.
#pragma once

#include <functional>

namespace CLI {  // NOLINT(readability-identifier-naming): the library's name
class App;
}

namespace banlieue::app {

// Set by the chosen subcommand's parse callback; returns the process exit code.
using Action = std::function<int()>;

// Exit codes shared by every role.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

}  // namespace banlieue::app
