// The `import`, `export` and `lint` subcommands: real retry configurations
// (Envoy, gRPC, Istio, Linkerd, AWS SDKs) in and out of scenarios.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

namespace retrystorm::cli {

struct ConfigCommands;

// Registers the subcommands on `app`; the returned object holds their options.
ConfigCommands& add_config_commands(CLI::App& app);
// Runs the parsed one: its exit status, or nothing when none was parsed.
// Throws InputError for bad input (exit 2).
std::optional<int> run_config_commands(ConfigCommands& c);

}  // namespace retrystorm::cli
