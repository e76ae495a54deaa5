// Our own format: kind: retrystorm-policy, a retry policy written plainly
// (an explicit ladder, or retries with backoff), for post-mortems and tests.
#include <cmath>

#include "systems/readers.hpp"
#include "systems/room.hpp"

namespace retrystorm::configs {

namespace {
const DurationRules kAny{false, true, true};  // numbers are seconds; "16m" works too

// A choice key's value as the key table reads it: the client policy with
// that key set (the typed enum is in it).
Scenario choice_of(const YAML::Node& n, const Where& w, const std::string& path) {
  std::string v = text(n, w);
  const KeySpec& k = key_or_throw(path);
  Scenario s;
  for (const auto& c : k.choices)
    if (c == v) {
      k.put(s, v);
      return s;
    }
  std::string list;
  for (const auto& c : k.choices) list += (list.empty() ? "" : ", ") + c;
  fail(w, "'" + v + "' is not allowed; choose one of " + list);
}

// A setting's place in the file, for messages and provenance.
Where where(const Reader& r, const std::string& key, const YAML::Node& n) {
  return at(r.file, key, n);
}

// ladder_s: the delays as written, read as the geometric backoff closest to
// them (a warning when they are not one).
void read_ladder(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  const YAML::Node ls = d["ladder_s"];
  if (!ls.IsSequence()) fail(where(r, "ladder_s", ls), "must be a list of delays");
  for (size_t i = 0; i < ls.size(); ++i) {
    Where wi = where(r, "ladder_s[" + std::to_string(i) + "]", ls[i]);
    l.ladder_s.push_back(duration(ls[i], wi, kAny));
  }
  if (l.ladder_s.empty()) fail(where(r, "ladder_s", ls), "an empty ladder: write retries: 0");
  // The model's own format: a ladder the model cannot run is refused, not cut.
  const int most = model_retry_cap();
  if (l.ladder_s.size() > static_cast<size_t>(most))
    fail(where(r, "ladder_s", ls), "more than " + std::to_string(most) + " retries");
  l.retries = static_cast<int>(l.ladder_s.size());
  l.backoff.base_s = l.ladder_s[0];
  l.backoff.multiplier =
      l.ladder_s.size() > 1 && l.ladder_s[0] > 0 ? l.ladder_s[1] / l.ladder_s[0] : 2;
  if (l.backoff.multiplier < 1) l.backoff.multiplier = 1;
  double cap = 0;
  bool geometric = true;
  for (size_t i = 1; i < l.ladder_s.size(); ++i) {
    double want = l.backoff.base_s * std::pow(l.backoff.multiplier, static_cast<double>(i));
    if (std::fabs(l.ladder_s[i] - want) > 1e-9 * std::max(1.0, want)) {
      if (i >= 2 && std::fabs(l.ladder_s[i] - l.ladder_s[i - 1]) < 1e-9 * l.ladder_s[i]) {
        cap = l.ladder_s[i];  // capped from here on
      } else {
        geometric = false;
      }
    }
  }
  l.backoff.cap_s = cap;
  std::string shown;
  for (double v : l.ladder_s) shown += (shown.empty() ? "" : ", ") + human_duration(v);
  std::string from = where(r, "ladder_s", ls).text() + ": " + shown;
  if (!geometric)
    r.warn(where(r, "ladder_s", ls),
           "not a geometric ladder; the model uses base " + human_duration(l.backoff.base_s) +
               " x " + number_text(l.backoff.multiplier) + " (lint uses the ladder as written)");
  l.from["client.retries"] = from + " (" + std::to_string(l.retries) + " retries)";
  l.from["client.backoff.base_s"] = from;
  l.from["client.backoff.multiplier"] = from;
  l.from["client.backoff.cap_s"] = from;
  l.backoff.jitter = Jitter::none;
  l.from["client.backoff.jitter"] = "a ladder of fixed delays";
}

// retries with backoff (the defaults: 3 retries, 1 s doubling, no cap, no jitter).
void read_retries_and_backoff(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  if (d["retries"]) {
    l.retries = static_cast<int>(
        whole(d["retries"], where(r, "retries", d["retries"]), 0, model_retry_cap()));
    l.from["client.retries"] = where(r, "retries", d["retries"]).text();
  } else {
    l.retries = 3;
    l.from["client.retries"] = r.file + ": retries left out (3)";
  }
  l.backoff.base_s = 1;
  l.backoff.multiplier = 2;
  l.backoff.cap_s = 0;
  l.backoff.jitter = Jitter::none;
  const YAML::Node bo = d["backoff"];
  if (bo) {
    if (!bo.IsMap()) fail(where(r, "backoff", bo), "must be an object");
    r.check_fields(bo, "backoff", {"base_s", "multiplier", "cap_s", "jitter"});
    if (bo["base_s"])
      l.backoff.base_s = duration(bo["base_s"], where(r, "backoff.base_s", bo["base_s"]), kAny);
    if (bo["multiplier"]) {
      l.backoff.multiplier =
          number(bo["multiplier"], where(r, "backoff.multiplier", bo["multiplier"]));
      if (l.backoff.multiplier < 1)
        fail(where(r, "backoff.multiplier", bo["multiplier"]), "must be 1 or more");
    }
    if (bo["cap_s"])
      l.backoff.cap_s = duration(bo["cap_s"], where(r, "backoff.cap_s", bo["cap_s"]), kAny);
    if (bo["jitter"])
      l.backoff.jitter =
          choice_of(bo["jitter"], where(r, "backoff.jitter", bo["jitter"]), "client.backoff.jitter")
              .client.backoff.jitter;
  }
  for (const char* k : {"base_s", "multiplier", "cap_s", "jitter"})
    l.from[std::string("client.backoff.") + k] =
        bo && bo[k] ? where(r, std::string("backoff.") + k, bo[k]).text() : r.file + ": default";
}

// deadline_s, timeout_s and retry_on_timeout.
void read_timeouts(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  if (d["deadline_s"]) {
    l.deadline_s = duration(d["deadline_s"], where(r, "deadline_s", d["deadline_s"]), kAny);
    l.from["client.deadline_s"] =
        where(r, "deadline_s", d["deadline_s"]).text() + ": " + human_duration(*l.deadline_s);
  }
  if (d["timeout_s"]) {
    double t = duration(d["timeout_s"], where(r, "timeout_s", d["timeout_s"]), kAny);
    if (t <= 0) fail(where(r, "timeout_s", d["timeout_s"]), "must be above 0");
    l.per_try_timeout_s = t;
    l.from["client.timeout_s"] = where(r, "timeout_s", d["timeout_s"]).text();
  }
  l.retry_on_timeout = true;
  if (d["retry_on_timeout"]) {
    l.retry_on_timeout =
        boolean(d["retry_on_timeout"], where(r, "retry_on_timeout", d["retry_on_timeout"]));
    l.from["client.retry_on_timeout"] = where(r, "retry_on_timeout", d["retry_on_timeout"]).text();
  }
}

// budget: kind and the numbers of the key table's client.budget.* keys.
void read_policy_budget(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  l.budget.kind = BudgetKind::none;
  l.from["client.budget.kind"] = r.file + ": no budget";
  const YAML::Node b = d["budget"];
  if (b) {
    if (!b.IsMap()) fail(where(r, "budget", b), "must be an object");
    for (const auto& kv : b) {
      std::string k = key_of(kv.first);
      Where wk = where(r, "budget." + k, kv.second);
      const KeySpec* spec = find_key("client.budget." + k);
      if (k == "kind") {
        l.budget.kind = choice_of(kv.second, wk, "client.budget.kind").client.budget.kind;
        l.from["client.budget.kind"] = wk.text();
      } else if (spec && spec->type == KeyType::number) {
        l.set_budget(k, spec->unit == "s" ? duration(kv.second, wk, kAny) : number(kv.second, wk));
        l.from["client.budget." + k] = wk.text();
      } else {
        r.warn(wk, "unknown budget field, ignored");
      }
    }
  }
}

}  // namespace

void read_policy(const std::vector<YAML::Node>& docs, Reader& r) {
  LayerPolicy& l = r.layer;
  if (docs.size() != 1) fail({r.file, "", line_of(docs[1])}, "one policy per file");
  const YAML::Node& d = docs[0];
  l.format = "retrystorm policy";
  l.system = System::retrystorm;
  l.has_retry_policy = true;
  l.has_budget_part = true;
  l.counting = "retries";
  l.count_field = "retries";
  r.check_fields(d, "",
                 {"kind", "name", "description", "ladder_s", "deadline_s", "timeout_s", "retries",
                  "retry_on_timeout", "backoff", "budget"});
  if (d["ladder_s"] && d["retries"])
    fail(where(r, "retries", d["retries"]), "give ladder_s or retries, not both");
  if (d["ladder_s"])
    read_ladder(d, r);
  else
    read_retries_and_backoff(d, r);
  read_timeouts(d, r);
  read_policy_budget(d, r);
  l.budget_from = l.from["client.budget.kind"];
}

}  // namespace retrystorm::configs
