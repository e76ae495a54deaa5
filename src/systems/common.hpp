// Shared pieces of the configuration importers: documents with line numbers,
// durations in every form the systems allow, and errors that name the file,
// the line and the key. See docs/configs.md.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "model/keys.hpp"
#include "text/number.hpp"  // every number in a message
#include "text/units.hpp"   // durations and shares in messages

namespace retrystorm::configs {

// Where a value sits: the file, the dotted key inside it and, when the parser
// gives one, the line (1-based; 0 = unknown).
struct Where {
  std::string file;
  std::string key;
  int line = 0;
  std::string text() const;  // "envoy.yaml:12: retry_policy.num_retries"
};

// A node that tests false: YAML::Node() is a defined null, which tests true.
inline YAML::Node missing() {
  return YAML::Node(YAML::NodeType::Undefined);
}

int line_of(const YAML::Node& n);
Where at(const std::string& file, const std::string& key, const YAML::Node& n);

// Bad input: "FILE:LINE: KEY: message".
[[noreturn]] void fail(const Where& w, const std::string& message);

// A word of a HAProxy or nginx file as written back: as it is when plain,
// else in double quotes with backslash escapes (both formats read it so).
std::string config_word(const std::string& word);

// Parses a whole file as YAML (documents separated by ---) or JSON. JSON is
// checked with nlohmann::json first so a JSON syntax error names its line.
// A YAML document that is a Kubernetes resource has its merge keys expanded
// (expand_merge_keys); `warnings`, when given, gets what that expansion says.
std::vector<YAML::Node> parse_documents(const std::string& text, const std::string& file,
                                        std::vector<std::string>* warnings = nullptr);

// Whether a document is a Kubernetes resource, read as kubectl reads it: a
// map with `kind` or `apiVersion` at its top, written or merged in (our own
// kind: retrystorm-policy is not one).
bool kubernetes_resource(const YAML::Node& doc);

// YAML merge keys (`<<: {attempts: 4}`, `<<: *anchor`, `<<: [*a, *b]`)
// expanded as kubectl does, whose sigs.k8s.io/yaml decodes with go-yaml v2
// (decode.go: d.mapping, d.merge, isMerge): the entries are taken in order
// and a merge sets its keys where it stands, so a key written after `<<`
// wins over a merged one, and a merged one over a key written before `<<`
// (a warning says so: YAML's merge rule keeps that key); of a list of maps
// the earlier wins. A `<<` of anything but a map or a list of maps is
// refused, as kubectl refuses it. A plain `<<` or one tagged !!merge merges;
// a quoted "<<" is a key. The maps are edited in place and `doc` returned:
// every value is the node it was written as, so its Mark (file:line) stays
// where it was written. Envoy's loader (yaml-cpp, no merge keys) and our own
// formats do not get this.
YAML::Node expand_merge_keys(YAML::Node doc, const std::string& file,
                             std::vector<std::string>* warnings = nullptr);
// The YAML documents of `text` (split at `---` lines) as texts of their own,
// each padded with empty lines so that its line numbers are the file's.
std::vector<std::string> document_texts(const std::string& text);

// Durations. Accepted forms: "1.5s", "100ms", "250us", "1m", "2h", "1m30s"
// (Go style, as Istio and Linkerd write them), protobuf Duration strings
// ("0.100s"), {seconds, nanos} objects where `allow_object`, and plain numbers
// of seconds where `allow_number`.
// The largest protobuf uint32 (UInt32Value: num_retries, max_retries, ...).
inline constexpr long long kUint32Max = (1LL << 32) - 1;

struct DurationRules {
  bool allow_object = false;
  bool allow_number = false;
  bool allow_units = true;  // false: protobuf strings only, "<seconds>s"
  // Units read (to warn about them) that the system itself refuses: the
  // message's example is then the system's own form.
  bool units_refused = false;
};
double parse_duration_text(const std::string& text, const Where& w, const DurationRules& rules);
double duration(const YAML::Node& n, const Where& w, const DurationRules& rules);

// Scalars with checks; each fails naming the key.
double number(const YAML::Node& n, const Where& w);
long long whole(const YAML::Node& n, const Where& w, long long min, long long max);
bool boolean(const YAML::Node& n, const Where& w);
std::string text(const YAML::Node& n, const Where& w);

// A protobuf wrapper value (DoubleValue, UInt32Value): plain or {value: x}.
double wrapped_number(const YAML::Node& n, const Where& w);
long long wrapped_whole(const YAML::Node& n, const Where& w, long long min, long long max);

// "retryPolicy" -> "retry_policy" (proto3 JSON allows either spelling).
std::string snake_case(const std::string& key);

// Protobuf Duration string: 0.1 -> "0.1s", 2 -> "2s".
std::string proto_duration(double seconds);
// The same for a gRPC service config: a fraction is written with all nine
// digits ("2.500000000s"), because grpc-js reads "2.5s" as 2 s + 5 ns
// (docs/conformance.md, "gRPC").
std::string grpc_duration_text(double seconds);
// Go-style duration for Istio/Linkerd: 0.1 -> "100ms", 90 -> "1m30s".
std::string go_duration(double seconds);

}  // namespace retrystorm::configs
