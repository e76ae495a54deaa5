#include <algorithm>
#include <cmath>

#include "systems/lint/rules.hpp"

namespace retrystorm::configs::lint {

namespace {

// Attempts per user request at the bottom of the stack: ClientPolicy's one
// definition (the product of retries + 1 over the layers).
double amplification(const std::vector<const LayerPolicy*>& layers) {
  ClientPolicy::Settings stack;
  for (const auto* l : layers) stack.layer_retries.push_back(l->retries);
  return ClientPolicy(std::move(stack)).attempts();
}

// How many instances a budget's verdict assumed, where it holds amounts per
// instance: "; the budget holds a cap of 3 ... with 100 instances (...)".
std::string instances_note(const Context& c) {
  for (const LayerPolicy* l : c.retrying) {
    std::string t = instances_text(*l, c.instances);
    if (!t.empty() && l->retries > 0) return "; " + l->file + "'s budget holds " + t;
  }
  return "";
}

}  // namespace

void rule_layers(const Context& c) {
  std::vector<size_t> with;
  for (size_t i = 0; i < c.retrying.size(); ++i)
    if (c.retrying[i]->retries > 0) with.push_back(i);
  if (with.size() < 2) return;
  std::string product, files;
  json per_layer = json::array();
  for (size_t i : with) {
    const LayerPolicy& l = *c.retrying[i];
    product += (product.empty() ? "" : " x ") + std::to_string(l.retries + 1);
    files +=
        (files.empty() ? "" : " -> ") + l.file + " (" + std::to_string(l.retries) + " retries)";
    per_layer.push_back({{"file", l.file}, {"retries", l.retries}, {"attempts", l.retries + 1}});
  }
  double a = amplification(c.retrying);
  Finding f = finding(Severity::warning, "retries-at-several-layers", files);
  f.message = "retries at " + std::to_string(with.size()) + " layers of one call path (" + files +
              "): attempts multiply, " + product + " = up to " + number_text(a) +
              " attempts at the bottom for one user request";
  size_t keep = with.back();
  f.fix = "retry at one layer only: keep the " + std::to_string(c.retrying[keep]->retries) +
          " retries of " + c.retrying[keep]->file + " and " +
          (with.size() == 2
               ? count_text(*c.retrying[with.front()], 0) + " in " + c.retrying[with.front()]->file
               : std::string("set the other layers to 0 retries"));
  f.numbers = {{"layers", per_layer}, {"amplification", a}};
  std::string stack;
  for (size_t i = 0; i < c.retrying.size(); ++i)
    stack += (i ? "," : "") + std::to_string(i == keep ? c.retrying[i]->retries : 0);
  f.fix_keys = {{"client.stack_retries", stack}};
  c.out.push_back(f);
}

void rule_load(const Context& c, std::optional<double> load, const std::string& load_from) {
  // Retries of refused connections and resets alone do not multiply an overload.
  if (std::none_of(c.retrying.begin(), c.retrying.end(),
                   [](const LayerPolicy* l) { return l->retries > 0 && retries_overload(*l); }))
    return;
  double a = amplification(c.retrying);
  if (a <= 1) return;
  double bound = 1 / a;
  Finding f;
  f.rule = "load-above-drain-bound";
  f.file = c.retrying.size() == 1 ? c.retrying[0]->file : std::string("the stack");
  f.numbers = {{"amplification", a}, {"safe_load_below", bound}};
  bool budget = std::any_of(c.retrying.begin(), c.retrying.end(), [](const LayerPolicy* l) {
    return l->budget.kind != BudgetKind::none;
  });
  // A fixed cap (Envoy's max_retries alone) bounds the retries in flight too,
  // but it is no retry budget (no-retry-budget says so): name what bounds.
  const bool follows = std::any_of(c.retrying.begin(), c.retrying.end(), [](const LayerPolicy* l) {
    return l->budget.follows_traffic();
  });
  const std::string bounded_by =
      follows ? "the retry budget" : "the fixed cap on retries in flight";
  std::string pct = number_text(std::round(bound * 1000) / 10) + "%";
  if (!load) {
    f.severity = Severity::info;
    f.message = "with up to " + number_text(a) +
                " attempts per request, a backlog of late "
                "responses surely drains only below 1/" +
                number_text(a) + " = " + pct +
                " of capacity; pass --load to check a service's load";
    f.fix = "keep the load below " + pct + " of capacity, or bound retries with a budget";
    c.out.push_back(f);
    return;
  }
  f.numbers["load"] = *load;
  if (*load < bound) return;
  f.severity = budget ? Severity::info : Severity::warning;
  int attempts = std::max(1, static_cast<int>(std::floor(1 / *load)));
  f.message = "load " + number_text(std::round(*load * 1000) / 10) + "% (" + load_from +
              ") is above 1/" + number_text(a) + " = " + pct +
              ": once every response is late, retries multiply demand by up to " + number_text(a) +
              " and the backlog need not drain after the trigger ends" +
              (budget ? "; " + bounded_by + " should bound this (see --simulate)" : "") +
              instances_note(c);
  f.fix = "at most " + std::to_string(attempts) + " attempt" + (attempts > 1 ? "s" : "") +
          " per request at this load (" +
          (c.retrying.size() == 1 ? count_text(*c.retrying[0], attempts - 1)
                                  : std::string("across all layers")) +
          "), or a retry budget";
  if (c.retrying.size() == 1) f.fix_keys = c.retries_fix(0, attempts - 1);
  c.out.push_back(f);
}

void rule_counting(const Context& c) {
  for (const auto* l : c.retrying)
    if (l->capped_from > 5) {
      Finding f = finding(Severity::warning, "counting-trap", l->file);
      f.message = "maxAttempts " + std::to_string(l->capped_from) +
                  " is silently capped to 5 by gRPC: 4 retries, not " +
                  std::to_string(l->capped_from - 1);
      f.fix = "write maxAttempts 5 (or fewer) so the file says what runs";
      f.numbers = {{"as_written", l->capped_from}, {"effective_attempts", 5}};
      c.out.push_back(f);
    }
  const LayerPolicy* by_attempts = nullptr;
  const LayerPolicy* by_retries = nullptr;
  for (const auto* l : c.retrying) {
    if (l->counting == "attempts" && !by_attempts) by_attempts = l;
    if (l->counting == "retries" && !by_retries && !room(l->system).our_own_format) by_retries = l;
  }
  if (!by_attempts || !by_retries) return;
  for (const auto* a : c.retrying)
    for (const auto* r : c.retrying) {
      if (a->counting != "attempts" || r->counting != "retries" || room(r->system).our_own_format)
        continue;
      bool same = a->as_written == r->as_written;
      Finding f = finding(same ? Severity::warning : Severity::info, "counting-trap",
                          a->file + ", " + r->file);
      f.message = a->count_field + " " + std::to_string(a->as_written) + " in " + a->file +
                  " counts attempts (" + std::to_string(a->retries) + " retries); " +
                  r->count_field + " " + std::to_string(r->as_written) + " in " + r->file +
                  " counts retries (" + std::to_string(r->retries + 1) + " attempts)" +
                  (same ? ": the same number means different things" : "");
      f.fix = "write both as attempts in a comment next to each setting, and check the product (" +
              std::to_string((a->retries + 1) * (r->retries + 1)) + " attempts)";
      f.numbers = {{a->count_field, a->as_written}, {r->count_field, r->as_written}};
      c.out.push_back(f);
      return;
    }
}

void rule_no_deadline(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0 || !l.deadline_s || *l.deadline_s > 0) return;
  if (room(l.system).caller_sets_deadline) return;  // the caller's to set
  Finding f = finding(Severity::info, "no-deadline", l.file);
  f.message =
      "no overall deadline: retries go on as long as the ladder lasts, whether or not "
      "anyone still waits";
  f.fix = "set " + lint_terms(l).deadline;
  c.out.push_back(f);
}

}  // namespace retrystorm::configs::lint
