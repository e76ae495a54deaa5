// Linkerd's retry settings written from a scenario: retry and timeout
// annotations on an HTTPRoute, or a ServiceProfile when there is a budget.
#include <yaml-cpp/yaml.h>

#include "systems/export_kit.hpp"

namespace retrystorm::configs {

using namespace kit;  // the exporters' shared pieces

namespace {

// A ServiceProfile: the only Linkerd retry configuration with a budget. The
// proxy drops a retryBudget with retryRatio outside [0, 1000] or a ttl
// outside [1 s, 60 s] (convert_retry_budget, linkerd2-proxy
// linkerd/service-profiles/src/proto.rs): both are clamped, with a note.
void linkerd_profile(YAML::Emitter& y, const Scenario& s, int retries, const Fit& fit) {
  auto& notes = fit.notes;
  const Budget& b = s.client.budget;
  comment_line(y, "A ServiceProfile: the only Linkerd retry configuration with a retry budget.");
  begin_resource(y, "linkerd.io/v1alpha2", "ServiceProfile", "backend.default.svc.cluster.local");
  entry(y, "namespace", "default");
  y << YAML::EndMap;
  begin_map(y, "spec");
  y << YAML::Key << "routes" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  entry(y, "name", "all");
  begin_map(y, "condition");
  quoted_entry(y, "pathRegex", ".*");
  y << YAML::EndMap;
  entry(y, "isRetryable", retries > 0);
  // No default route timeout since Linkerd 2.9: none is written for none.
  if (s.client.deadline_s > 0)
    entry(y, "timeout",
          go_duration(fit.duration(s.client.deadline_s, "client.deadline_s", "timeout")),
          "the whole request, retries included");
  y << YAML::EndMap << YAML::EndSeq;
  double ratio = std::clamp(b.ratio, 0.0, 1000.0);
  if (ratio != b.ratio)
    notes.push_back("retryRatio: " + number_text(b.ratio) +
                    " is above the 1000 Linkerd allows; clamped to 1000");
  double ttl = std::clamp(b.ttl_s, 1.0, 60.0);
  if (ttl != b.ttl_s)
    notes.push_back("ttl: " + human_duration(b.ttl_s) +
                    " is outside the 1 s to 60 s the Linkerd proxy accepts (it would never "
                    "retry); clamped to " +
                    human_duration(ttl));
  begin_map(y, "retryBudget");
  entry(y, "retryRatio", number_text(ratio));
  entry(y, "minRetriesPerSecond",
        number_text(fit.whole(b.min_retries_per_s, 0, kUint32Max, "minRetriesPerSecond")));
  entry(y, "ttl", go_duration(ttl));
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  notes.push_back(
      "a ServiceProfile sets no retry count (the budget limits retries), no per-attempt "
      "timeout and no backoff (it retries at once): retries " +
      std::to_string(retries) + ", timeout " + human_duration(s.client.timeout_s) +
      " per attempt and the backoff cannot be expressed");
}

// Linkerd 2.16+ annotations back off 25 ms doubling to 250 ms; the import
// reads that as equal jitter on windows of 50 ms doubling to 250 ms
// (linkerd/import.cpp, docs/policies.md).
bool linkerd_backoff(const Backoff& b) {
  return b.jitter == Jitter::equal && b.base_s == 0.05 && b.multiplier == 2 && b.cap_s == 0.25;
}

// retry.linkerd.io/http's status ranges for the scenario's retried answers
// (linkerd/import.cpp reads them back): 5xx a 503, 429 a 429; Linkerd
// retries refused streams whatever they say. Neither retried: none ("": no
// /http annotation, and /limit alone retries refused streams only).
std::string linkerd_http_ranges(const Scenario& s, std::vector<std::string>& notes) {
  const AnswerSet a = s.retried_answers();
  const bool r503 = a & answer_bit(FailureClass::http_503),
             r429 = a & answer_bit(FailureClass::http_429);
  std::string ranges = r429 && !r503 ? "429" : r429 ? "5xx,429" : r503 ? "5xx" : "";
  AnswerSet written = answer_bit(FailureClass::refused) |
                      (r429 ? answer_bit(FailureClass::http_429) : 0) |
                      (r503 ? answer_bit(FailureClass::http_503) : 0);
  note_retried(s, written, "Linkerd", notes);
  return ranges;
}

// The retry.linkerd.io and timeout.linkerd.io annotations. No retries: no
// retry.linkerd.io annotation at all, since a limit of "0" with any other retry
// annotation means 1 retry (parse_http_retry, linkerd2
// policy-controller/k8s/index/src/outbound/index/http.rs).
// A duration as Linkerd's annotations take it: one whole number and one unit
// (parse_duration, linkerd2 policy-controller/k8s/index/src/outbound/index.rs
// refuses "1.5s" and "1m30s"): whole milliseconds, or whole seconds.
std::string annotation_duration(double v, const Fit& fit, const std::string& key,
                                const std::string& field) {
  const double fitted = fit.duration(v, key, field);
  const long long ms = std::max(1LL, std::llround(fitted * 1000));
  if (std::fabs(static_cast<double>(ms) / 1000 - fitted) > 1e-9)
    fit.notes.push_back(field + ": " + human_duration(fitted) +
                        " rounded to whole milliseconds, as Linkerd's annotations take them");
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

void linkerd_annotation_entries(YAML::Emitter& y, const Scenario& s, int retries, const Fit& fit) {
  auto& notes = fit.notes;
  if (retries > 0) {
    if (std::string ranges = linkerd_http_ranges(s, notes); !ranges.empty())
      entry(y, "retry.linkerd.io/http", ranges);
    quoted_entry(y, "retry.linkerd.io/limit", std::to_string(retries),
                 "retries, so " + std::to_string(retries + 1) + " attempts");
    if (s.client.retry_on_timeout)
      entry(y, "retry.linkerd.io/timeout",
            annotation_duration(s.client.timeout_s, fit, "client.timeout_s",
                                "retry.linkerd.io/timeout"),
            "each attempt but the last");
    else if (s.client.deadline_s <= 0 || std::fabs(s.client.deadline_s - s.client.timeout_s) > 1e-9)
      notes.push_back(
          "without retry.linkerd.io/timeout an attempt's timeout is the request "
          "timeout; the scenario's " +
          human_duration(s.client.timeout_s) + " per attempt cannot be expressed");
    if (!linkerd_backoff(s.client.backoff))
      notes.push_back(
          "Linkerd's backoff is fixed (25 ms doubling to 250 ms, each delay in [w, 2w)); the "
          "scenario's backoff cannot be expressed");
  }
  if (s.client.deadline_s > 0)
    entry(y, "timeout.linkerd.io/request",
          annotation_duration(s.client.deadline_s, fit, "client.deadline_s",
                              "timeout.linkerd.io/request"),
          "the whole request, retries included");
}

// Annotations on an HTTPRoute (no annotations block when there is none).
void linkerd_annotations(YAML::Emitter& y, const Scenario& s, int retries, const Fit& fit) {
  comment_line(y, "Annotations of Linkerd 2.16+ on the route (or Service) the client calls.");
  begin_resource(y, "gateway.networking.k8s.io/v1", "HTTPRoute", "backend");
  if (retries > 0 || s.client.deadline_s > 0) {
    begin_map(y, "annotations");
    linkerd_annotation_entries(y, s, retries, fit);
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
  begin_map(y, "spec");
  y << YAML::Key << "parentRefs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  entry(y, "name", "backend");
  entry(y, "kind", "Service");
  entry(y, "group", "core");
  entry(y, "port", 80);
  y << YAML::EndMap << YAML::EndSeq;
  y << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "backendRefs" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  entry(y, "name", "backend");
  entry(y, "port", 80);
  y << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndSeq;
  y << YAML::EndMap << YAML::EndMap;
  fit.notes.push_back(s.client.budget.kind == BudgetKind::none
                          ? "retry annotations have no retry budget; a ServiceProfile retryBudget "
                            "(retryRatio 0.2, minRetriesPerSecond 10, ttl 10s) caps retries"
                          : "the scenario's '" + budget_kind_name(s.client.budget.kind) +
                                "' budget has no equivalent in Linkerd's annotations");
}

}  // namespace

void write_linkerd(const Scenario& s, Draft& d) {
  auto& [r, fit, retries, notes] = d;
  YAML::Emitter y;
  comment_line(y, heading("Linkerd", s));
  if (s.client.budget.kind == BudgetKind::ratio_ttl)
    linkerd_profile(y, s, retries, fit);
  else
    linkerd_annotations(y, s, retries, fit);
  server_notes(s, notes);
  comment_lines(y, notes);
  r.text = yaml_text(y);
}

}  // namespace retrystorm::configs
