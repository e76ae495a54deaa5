// What every subcommand shares: reading the scenario its options name, and
// writing its output whole or not at all.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm::cli {

// The scenario of --preset or --scenario (default: the `fallback` preset),
// then every --set PATH=VALUE, validated. Throws InputError.
Scenario build_scenario(const std::string& preset, const std::string& file,
                        const std::vector<std::string>& sets, const std::string& fallback);

// Writes to standard output, or to the file `out`: a regular file (or a new
// one) is written to a fresh temporary file beside it and renamed into place,
// so a failure leaves what was there; a terminal, pipe, FIFO or socket is
// written straight into. `option` names the flag in messages. Throws InputError.
void emit(const std::string& text, const std::string& out, const std::string& option = "--out");

// Several files written as one: either all of them are in place afterwards or
// none has changed (e.g. the two logs of --log).
struct OutputFile {
  std::string path;
  std::string text;
};
void emit_all(const std::vector<OutputFile>& files, const std::string& option);

// InputError unless `format` is one of `allowed`.
void check_format(const std::string& format, std::initializer_list<const char*> allowed);

}  // namespace retrystorm::cli
