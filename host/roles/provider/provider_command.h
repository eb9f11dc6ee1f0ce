#pragma once

#include "host/app/command.h"

namespace banlieue::roles::provider {

// `banlieue provider <backend> --provider <ns>/<name>`: the generic provider runtime. Loads the
// backend's plugin named by the Provider's ProviderClass (only from inside --plugin-dir), holds
// one plugin instance for the Provider, and reconciles the Provider and the infrastructure
// objects of every kind the plugin serves that name it.
void registerProviderCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::provider
