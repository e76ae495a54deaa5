// Outside input, read and parsed within bounds: every file a command reads,
// every JSON body of the HTTP API and every JSON or YAML document goes through
// here, so one set of limits (docs/limits.md) holds for all of them.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace YAML {
class Node;
}

namespace retrystorm {

// No scenario, configuration or request of ours comes near these.
constexpr size_t kMaxInputBytes = 4 << 20;            // one input file or document
constexpr int kMaxNesting = 200;                      // levels of maps and lists
constexpr size_t kMaxValues = 200'000;                // values after YAML aliases expand
constexpr size_t kMaxExpandedBytes = kMaxInputBytes;  // their text, likewise

// A file's bytes, at most kMaxInputBytes. InputError naming `option` and the
// path for a missing file, a directory, a read error or a file too large
// (also for endless ones such as /dev/zero).
std::string read_input_file(const std::string& path, const std::string& option);

// InputError (naming `source`, the line and the byte) unless the text is
// UTF-8: names and descriptions end up in JSON answers.
void check_utf8(const std::string& text, const std::string& source);

// InputError (naming `source` and the line) when flow brackets or block
// indentation nest deeper than kMaxNesting. Run before any recursive parser.
void check_nesting(const std::string& text, const std::string& source);

// JSON text: size, nesting and duplicate keys checked; numbers out of the
// double range refused. Errors name `source`.
// `max_bytes`: a larger bound for answers that are documented larger than a
// file (a Prometheus answer).
nlohmann::json parse_json_text(const std::string& text, const std::string& source,
                               size_t max_bytes = kMaxInputBytes);

// YAML text as JSON (numbers, booleans, strings, maps, lists): size, nesting,
// duplicate keys and alias expansion (kMaxValues) checked.
nlohmann::json parse_yaml_text(const std::string& text, const std::string& source);
// The same checks on a YAML document its reader walks as YAML: duplicate
// keys (the first one won silently; kubectl refuses them), nesting and alias
// expansion. InputError naming `source` and the line. `merges`: the reader
// expands YAML merge keys (Kubernetes resources), for the message on two `<<`.
void check_yaml_document(const YAML::Node& document, const std::string& source,
                         bool merges = false);

// A YAML merge key as go-yaml's isMerge reads one: a plain `<<` or one tagged
// !!merge (a quoted "<<" is an ordinary key).
bool is_merge_key(const YAML::Node& key);

}  // namespace retrystorm
