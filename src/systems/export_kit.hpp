// What the exporters of every room share (internal to src/systems): the
// layer a configuration is written for, notes wrapped as comments, yaml-cpp
// emitter helpers, and the clamps that keep a value inside what the target
// system accepts. Each system's export.cpp writes its own file with these.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/keys.hpp"
#include "model/scenario.hpp"
#include "policies/backoff.hpp"
#include "systems/common.hpp"
#include "systems/export.hpp"
#include "systems/room.hpp"

namespace retrystorm::configs::kit {

// protobuf's Duration holds at most 315,576,000,000 s (10,000 years); gRPC
// refuses more (LoadDuration::LoadInto in gRPC's json_object_loader.cc), so
// does Envoy's proto validation.
constexpr double kProtoDurationMax = 315'576'000'000.0;

// The largest counts the systems' integer fields hold.
constexpr double kInt32Max = 2'147'483'647.0;  // int32 fields

// The layer a configuration is written for: the innermost (the one that
// calls the dependency), as the one typed client policy reads the scenario.
int exported_retries(const Scenario& s);
// How the exported layer (the innermost) hedges (client.hedging).
Hedging exported_hedging(const Scenario& s);

// The scenario's name in a heading comment: a line break (or another control
// character) in it is escaped, so that it cannot end the comment.
std::string shown_name(const Scenario& s);

// "<product> retry settings for scenario '<name>' (written by retrystorm).":
// the first comment of every exported file.
std::string heading(const std::string& product, const Scenario& s);

// The largest backoff window `n` retries reach: a cap that never binds.
double top_window(const Backoff& b, int n);

// The first backoff window to write as `field` (Envoy's base_interval,
// gRPC's initialBackoff): base_s, but the cap when the cap is below it, since
// every window is then the cap (policies/backoff.hpp) and the systems
// refuse a cap below the base; noted. 1 ms for a zero base (`system` needs
// more than 0), noted too.
double first_window(const Backoff& b, const std::string& system, const std::string& field,
                    std::vector<std::string>& notes);

// When the scenario retries at several layers: the note that the file is the
// innermost layer's.
std::string stack_note(const Scenario& s);

// A note as comment lines of at most 92 columns once "# " is put before
// them: the first line, then continuation lines indented by two spaces.
std::vector<std::string> wrapped(const std::string& note);

// Comment lines for INI and the proxies' files.
std::string commented(const std::vector<std::string>& notes, const std::string& mark);

// A comment on a line of its own at column 0 (before the first top-level
// value or after one); line breaks in `text` continue it.
void comment_line(YAML::Emitter& y, const std::string& text);

// Notes, each wrapped as `commented` wraps it.
void comment_lines(YAML::Emitter& y, const std::vector<std::string>& notes);

// `key: "value"`: strings the systems expect quoted (an annotation's number).
void quoted_entry(YAML::Emitter& y, const std::string& key, const std::string& value,
                  const std::string& comment = "");

// `key:` opening a block mapping, with `# comment` after the colon when given.
void begin_map(YAML::Emitter& y, const std::string& key, const std::string& comment = "");

// A Kubernetes resource's head: apiVersion, kind and metadata.name, with
// metadata left open for more fields (the caller ends it).
void begin_resource(YAML::Emitter& y, const std::string& api_version, const std::string& kind,
                    const std::string& name);

// The emitter's text as a file (ending with a newline). A misuse of the
// emitter is a bug here, never the user's input.
std::string yaml_text(const YAML::Emitter& y);

std::string server_notes(const Scenario& s, std::vector<std::string>& notes);

// "1000000 s" (number_text writes whole numbers without an exponent).
std::string seconds_text(double v);

// `key: value`, with `# comment` after it on the same line when given (a
// comment with line breaks continues under the first `#`).
template <typename Value>
void entry(YAML::Emitter& y, const std::string& key, const Value& value,
           const std::string& comment = "") {
  y << YAML::Key << key << YAML::Value << value;
  if (!comment.empty()) y << YAML::Comment(comment);
}

// The address written for the service's servers in a proxy's configuration:
// a placeholder the user replaces, on another port than the proxy's own
// `listen` (nginx proxying to itself looped until its connections ran out).
inline constexpr const char* kServersPlaceholder = "127.0.0.1:9000";

// Values as the system's own validator accepts them and our import reads them
// back into the key's range; each value changed gets a note saying so
// (docs/configs.md, "Export").
struct Fit {
  std::string system;
  double min_duration_s;  // Envoy, gRPC, Istio keep milliseconds: less reads as 0
  std::vector<std::string>& notes;

  // A duration written as `field` for the scenario key `key`.
  double duration(double v, const std::string& key, const std::string& field) const {
    double key_max = key_or_throw(key).max;
    double hi = std::min(kProtoDurationMax, key_max);
    double out = std::clamp(v, min_duration_s, hi);
    if (out > v)
      notes.push_back(field + ": " + human_duration(v) + " is below the " +
                      human_duration(min_duration_s) + " " + system + " can express; clamped to " +
                      human_duration(out));
    else if (out < v)
      notes.push_back(field + ": " + seconds_text(v) + " is more than " + key +
                      " allows (at most " + seconds_text(key_max) +
                      "; protobuf's Duration allows at most " + seconds_text(kProtoDurationMax) +
                      "); clamped to " + seconds_text(out) + " (" + human_duration(out) + ")");
    return out;
  }
  // A whole number from `lo` to `hi` written as `field`.
  double whole(double v, double lo, double hi, const std::string& field) const {
    double out = std::clamp(std::round(v), lo, hi);
    if (out != v)
      notes.push_back(field + ": " + number_text(v) + " is not a whole number from " +
                      number_text(lo) + " to " + number_text(hi) + "; clamped to " +
                      number_text(out));
    return out;
  }
  // A percentage of at most 100 written as `field`.
  double percent(double ratio, const std::string& field) const {
    double v = ratio * 100;
    if (v <= 100) return v;
    notes.push_back(field + ": " + number_text(v) + "% is above the 100% " + system +
                    " allows; clamped to 100");
    return 100;
  }
};

// A configuration being written for `system`, made by export_config for the
// room's writer: the result (the stack's note first), the clamps for what the
// system accepts (`min_duration_s`: the shortest duration it writes) and the
// retries the file gives. Built in place: `fit` and `notes` refer to the
// result's notes.
struct Draft {
  ExportResult result;
  Fit fit;
  int retries;
  std::vector<std::string>& notes;  // the result's
  Draft(System system, const Scenario& s, double min_duration_s);
  Draft(const Draft&) = delete;
  Draft& operator=(const Draft&) = delete;
};

// A note when the file retries other failures than the scenario does (the
// system cannot choose them as client.retry_on does): `written` is what the
// file retries, in the scenario's classes (docs/configs.md, "Export").
void note_retried(const Scenario& s, AnswerSet written, const std::string& system,
                  std::vector<std::string>& notes);

// A proxy's list of retry conditions, built from the scenario's retried
// failures: each word added with the failure classes it retries.
struct Conditions {
  AnswerSet wanted;   // the scenario's retried answers
  std::string words;  // space-separated
  AnswerSet written = 0;
  explicit Conditions(const Scenario& s) : wanted(s.retried_answers()) {}
  bool wants(FailureClass c) const { return (wanted & answer_bit(c)) != 0; }
  void add(const char* word, AnswerSet classes) {
    words += (words.empty() ? "" : " ") + std::string(word);
    written |= classes;
  }
};

// What HAProxy and nginx cannot express, shared: they retry at once, and
// have no per-request deadline (HAProxy) and no retry budget.
void proxy_notes(const Scenario& s, int retries, const std::string& system,
                 std::vector<std::string>& notes);

// Milliseconds as both proxies write them: whole, at least 1, at most `max_ms`.
long long proxy_ms(double seconds, double max_ms, const std::string& field, const Fit& fit,
                   const std::string& key);

}  // namespace retrystorm::configs::kit
