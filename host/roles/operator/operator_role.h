#pragma once

#include "host/app/command.h"

namespace banlieue::roles::provider_operator {

// `banlieue operator`: mints one least-privilege workload per Provider from its ProviderClass
// and publishes each class's status (docs/adr/0011-operator.md).
void registerOperatorCommand(CLI::App& app, app::Action& action);

}  // namespace banlieue::roles::provider_operator
