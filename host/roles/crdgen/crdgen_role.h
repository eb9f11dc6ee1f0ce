#pragma once

#include "host/app/command.h"

namespace banlieue::roles::crdgen {

// `banlieue crdgen [--out DIR] [--plugin-dir DIR]`: the CRDs generated from the API types
// (plus plugin-shipped CRDs when --plugin-dir is given), to stdout or one file per kind.
void registerCrdgenCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::crdgen
