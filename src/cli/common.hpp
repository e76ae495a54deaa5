// What every subcommand shares: reading the scenario its options name, and
// writing its output whole or not at all.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm::cli {

// A file's bytes; InputError naming the path when it cannot be read.
std::string read_file(const std::string& path);

// The scenario of --preset or --scenario (default: the `fallback` preset),
// then every --set PATH=VALUE, validated. Throws InputError.
Scenario build_scenario(const std::string& preset, const std::string& file,
                        const std::vector<std::string>& sets, const std::string& fallback);

// Writes to standard output, or to `out` through a temporary file renamed
// into place, so a failure leaves no partial file. Throws InputError.
void emit(const std::string& text, const std::string& out);

// InputError unless `format` is one of `allowed`.
void check_format(const std::string& format, std::initializer_list<const char*> allowed);

}  // namespace retrystorm::cli
