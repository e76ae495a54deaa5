// The `import`, `export` and `lint` subcommands: real retry configurations
// (Envoy, gRPC, Istio, Linkerd, AWS SDKs) in and out of scenarios.
#pragma once

#include "cli/common.hpp"

namespace retrystorm::cli {

// Registers `import`, `export` and `lint` on `app` and their actions in `table`.
void add_config_commands(CLI::App& app, CommandTable& table);

}  // namespace retrystorm::cli
