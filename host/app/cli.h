#pragma once

namespace banlieue::app {

// Parses the command line, configures logging and runs the chosen role.
int run(int argc, char** argv);

}  // namespace banlieue::app
