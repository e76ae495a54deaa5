#include "systems/lint/rules.hpp"

#include <cmath>

namespace retrystorm::configs::lint {

std::string count_text(const LayerPolicy& l, int retries) {
  LintTerms t = lint_terms(l);
  if (retries == 0 && !t.no_retries.empty()) return t.no_retries;
  if (!t.no_count.empty()) return t.no_count;
  return "set " + t.retries + t.assign + std::to_string(t.counts_attempts ? retries + 1 : retries) +
         t.end;
}

std::string percent_text(double p) {
  double v = p * 100;
  if (!(v > 0)) return "0%";
  if (p >= 1) return "100%";
  int decimals = std::clamp(1 - static_cast<int>(std::floor(std::log10(v))), 1, 15);
  double scale = std::pow(10.0, decimals);
  double shown = std::round(v * scale) / scale;
  return shown >= 100 ? "over 99.9%" : number_text(shown) + "%";
}

Finding finding(Severity severity, std::string rule, std::string file) {
  Finding f;
  f.severity = severity;
  f.rule = std::move(rule);
  f.file = std::move(file);
  return f;
}

}  // namespace retrystorm::configs::lint
