// The `analyze` subcommand: incident logs in, queue figures and a ranked
// diagnosis out (docs/analyze.md).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

namespace retrystorm::cli {

struct AnalyzeCommand;

// Registers `analyze` on `app`; the returned object holds its options.
AnalyzeCommand& add_analyze_command(CLI::App& app);
// Runs it when it was parsed: its exit status, else nothing. Throws
// InputError for bad input (exit 2).
std::optional<int> run_analyze_command(AnalyzeCommand& c);

}  // namespace retrystorm::cli
