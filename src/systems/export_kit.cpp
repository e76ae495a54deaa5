#include "systems/export_kit.hpp"

#include <sstream>
#include <stdexcept>

#include "policies/client_policy.hpp"
#include "systems/import.hpp"
#include "text/printable.hpp"

namespace retrystorm::configs::kit {

// The layer a configuration is written for: the innermost (the one that
// calls the dependency), as the one typed client policy reads the scenario.
int exported_retries(const Scenario& s) {
  return ClientPolicy::of(s).layer_retries().back();
}

Hedging exported_hedging(const Scenario& s) {
  return s.hedged_layers().back();
}

// The scenario's name in a heading comment: a line break (or another control
// character) in it is escaped, so that it cannot end the comment.
std::string shown_name(const Scenario& s) {
  return printable(s.name);
}

std::string heading(const std::string& product, const Scenario& s) {
  return product + " retry settings for scenario '" + shown_name(s) + "' (written by retrystorm).";
}

// The largest backoff window `n` retries reach: a cap that never binds.
double top_window(const Backoff& b, int n) {
  return backoff_window_s(b, std::max(n, 1));
}

double first_window(const Backoff& b, const std::string& system, const std::string& field,
                    std::vector<std::string>& notes) {
  if (b.base_s <= 0) {
    notes.push_back(system + " needs " + field + " > 0; 1ms is the closest to immediate retries");
    return 0.001;
  }
  if (b.cap_s > 0 && b.cap_s < b.base_s) {
    notes.push_back("client.backoff.cap_s " + human_duration(b.cap_s) + " is below base_s " +
                    human_duration(b.base_s) + ", so every backoff window is the cap: " + field +
                    " is written as the cap");
    return b.cap_s;
  }
  return b.base_s;
}

std::string stack_note(const Scenario& s) {
  const ClientPolicy p = ClientPolicy::of(s);
  if (p.layers() <= 1) return "";
  std::string list;
  for (int r : p.layer_retries()) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return "the scenario retries at " + std::to_string(p.layers()) + " layers (" + list +
         " retries, outermost first; up to " + std::to_string(p.attempts()) +
         " attempts per request): this is one layer's configuration (the innermost); each "
         "layer needs its own";
}

// A note as comment lines of at most 92 columns once "# " is put before
// them: the first line, then continuation lines indented by two spaces.
std::vector<std::string> wrapped(const std::string& note) {
  std::vector<std::string> lines{""};
  size_t len = 2;  // "# " before the first line, "#   " before the others
  bool line_start = true;
  std::istringstream words(note);
  for (std::string w; words >> w;) {
    if (!line_start && len + w.size() > 92) {
      lines.push_back("  ");
      len = 4;
      line_start = true;
    }
    lines.back() += (line_start ? "" : " ") + w;
    len += w.size() + 1;
    line_start = false;
  }
  return lines;
}

// Comment lines for INI and the proxies' files.
std::string commented(const std::vector<std::string>& notes, const std::string& mark) {
  std::string out;
  for (const auto& n : notes)
    for (const auto& line : wrapped(n)) out += mark + " " + line + "\n";
  return out;
}

// YAML goes through yaml-cpp's emitter, so quoting and escaping are the
// library's; what the system cannot express is a YAML::Comment.

// A comment on a line of its own at column 0 (before the first top-level
// value or after one); line breaks in `text` continue it.
void comment_line(YAML::Emitter& y, const std::string& text) {
  if (y.size() > 0) y << YAML::Newline;
  y << YAML::Comment(text);
}

// Notes, each wrapped as `commented` wraps it.
void comment_lines(YAML::Emitter& y, const std::vector<std::string>& notes) {
  for (const auto& n : notes) {
    std::string text;
    for (const auto& line : wrapped(n)) text += (text.empty() ? "" : "\n") + line;
    comment_line(y, text);
  }
}

// `key: "value"`: strings the systems expect quoted (an annotation's number).
void quoted_entry(YAML::Emitter& y, const std::string& key, const std::string& value,
                  const std::string& comment) {
  y << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  if (!comment.empty()) y << YAML::Comment(comment);
}

// `key:` opening a block mapping, with `# comment` after the colon when given.
void begin_map(YAML::Emitter& y, const std::string& key, const std::string& comment) {
  y << YAML::Key << key << YAML::Value;
  if (!comment.empty()) y << YAML::Comment(comment);
  y << YAML::BeginMap;
}

// A Kubernetes resource's head: apiVersion, kind and metadata.name, with
// metadata left open for more fields (the caller ends it).
void begin_resource(YAML::Emitter& y, const std::string& api_version, const std::string& kind,
                    const std::string& name) {
  y << YAML::BeginMap;
  entry(y, "apiVersion", api_version);
  entry(y, "kind", kind);
  begin_map(y, "metadata");
  entry(y, "name", name);
}

// The emitter's text as a file (ending with a newline). A misuse of the
// emitter is a bug here, never the user's input.
std::string yaml_text(const YAML::Emitter& y) {
  if (!y.good()) throw std::logic_error("YAML emitter: " + y.GetLastError());
  return std::string(y.c_str()) + "\n";
}

std::string server_notes(const Scenario& s, std::vector<std::string>& notes) {
  if (s.server.shed_abandoned)
    notes.push_back(
        "shedding abandoned work happens in the server, not here: propagate the "
        "deadline and drop expired work");
  if (s.server.queue_limit > 0)
    notes.push_back("the queue limit of " + number_text(s.server.queue_limit) +
                    " belongs to the server (or Envoy's max_pending_requests)");
  return "";
}

// "1000000 s" (number_text writes whole numbers without an exponent).
std::string seconds_text(double v) {
  return number_text(v) + " s";
}

// What HAProxy and nginx cannot express, shared: they retry at once, and
// have no per-request deadline (HAProxy) and no retry budget.
void proxy_notes(const Scenario& s, int retries, const std::string& system,
                 std::vector<std::string>& notes) {
  const Backoff& b = s.client.backoff;
  if (retries > 0 && b.base_s > 0)
    notes.push_back(system + " retries at once: the scenario's backoff (base " +
                    human_duration(b.base_s) + ", x" + number_text(b.multiplier) + ", cap " +
                    (b.cap_s > 0 ? human_duration(b.cap_s) : std::string("none")) + ", jitter " +
                    jitter_name(b.jitter) + ") cannot be expressed");
  if (s.client.budget.kind != BudgetKind::none)
    notes.push_back(system + " has no retry budget: the scenario's '" +
                    budget_kind_name(s.client.budget.kind) + "' budget cannot be expressed");
}

// Milliseconds as both proxies write them: whole, at least 1, at most `max_ms`.
long long proxy_ms(double seconds, double max_ms, const std::string& field, const Fit& fit,
                   const std::string& key) {
  double v = fit.duration(seconds, key, field);  // at least 1 ms, at most the key's maximum
  double ms = std::round(v * 1000);
  if (ms > max_ms) {
    fit.notes.push_back(field + ": " + human_duration(v) + " is more than the " +
                        number_text(max_ms) + " ms " + fit.system + " allows; clamped to " +
                        number_text(max_ms) + " ms");
    ms = max_ms;
  }
  return static_cast<long long>(ms);
}

void note_retried(const Scenario& s, AnswerSet written, const std::string& system,
                  std::vector<std::string>& notes) {
  const AnswerSet wanted = s.retried_answers();
  if (written == wanted) return;
  auto words = [](AnswerSet a) { return a == 0 ? std::string("none") : answer_list(a, ", "); };
  std::string note = "the scenario retries " + words(wanted) + " (client.retry_on '" +
                     s.client.retry_on + "'); this " + system + " file retries " + words(written);
  if (AnswerSet missing = wanted & ~written) note += ": " + words(missing) + " is not retried";
  if (AnswerSet extra = written & ~wanted)
    note += std::string(wanted & ~written ? ", and " : ": ") + words(extra) + " is retried as well";
  notes.push_back(note + " (" + system + " cannot choose them one by one)");
}

Draft::Draft(System system, const Scenario& s, double min_duration_s)
    : result{system, "", {}},
      fit{system_label(system), min_duration_s, result.notes},
      retries(exported_retries(s)),
      notes(result.notes) {
  if (!stack_note(s).empty()) result.notes.push_back(stack_note(s));
  // Retries of no failure at all are no retries: written as such, since
  // each system's own conditions would retry something. Hedges go on a
  // timer, not on a failure, where the system writes them (Envoy, gRPC).
  const bool hedges =
      exported_hedging(s) != Hedging::none && (system == System::envoy || system == System::grpc);
  if (retries > 0 && s.retried_answers() == 0 && !s.client.retry_on_timeout && !hedges) {
    result.notes.push_back(
        "client.retry_on 'none' and client.retry_on_timeout false: the "
        "scenario retries no failure, so the file has no retries (its " +
        std::to_string(retries) + " retries are never used)");
    retries = 0;
  }
}

}  // namespace retrystorm::configs::kit
