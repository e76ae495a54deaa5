// Lint's fixes as edits of the user's file (issue 26, part 5; docs/configs.md,
// "Fixes as file edits"): every edit lint offers for the fixtures is applied
// to the file it came from, the edited file is imported and linted again, the
// finding is gone, the rest of the file is as written, and the simulated
// peak is no worse (except where the fix says it adds load). The real
// systems' own checks of the edited files are in
// tests/conformance/fix_edit_conformance_test.cpp.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "app/configs.hpp"
#include "configs_helpers.hpp"
#include "systems/lint.hpp"

namespace retrystorm {
namespace {

using configs::testing::fixture;

// Fixtures whose findings have an edit, and the rules edited in each.
const std::vector<std::pair<std::string, std::set<std::string>>> kEdited = {
    {"envoy/defaults.yaml", {"timeouts-never-retried"}},
    {"envoy/long-ladder.yaml", {"timeouts-never-retried"}},
    {"grpc/no-throttling.json", {"no-retry-budget"}},
    {"aws/legacy.ini", {"no-retry-budget"}},
    {"aws/defaults.ini", {"no-retry-budget"}},
    {"nginx/location.conf", {"unlimited-tries", "per-try-timeouts-exceed-deadline"}},
    {"istio/virtualservice.yaml", {"per-try-timeouts-exceed-deadline"}},
};

// The fix that adds retries of timed-out attempts adds load by design (its
// text says so and asks for a budget).
const std::set<std::string> kAddsLoad = {"timeouts-never-retried"};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

double peak_of(const configs::ConfigFile& f) {
  app::LintRequest request;
  request.files = {f};
  request.options.simulate = true;
  configs::LintReport r = app::lint(request);
  return r.simulation ? r.simulation->as_configured.peak_amplification : 0;
}

TEST(FixEdits, EveryEditIsAcceptedRemovesItsFindingAndKeepsTheRestOfTheFile) {
  int edits = 0;
  for (const auto& [name, rules] : kEdited) {
    SCOPED_TRACE(name);
    configs::ConfigFile original = fixture(name);
    configs::LintReport before = configs::lint_configs({original});
    std::set<std::string> edited;
    for (const auto& f : before.findings) {
      if (!f.edit) continue;
      edited.insert(f.rule);
      ++edits;
      configs::ConfigFile fixed{original.name, f.edit->text};
      configs::LintReport after = configs::lint_configs({fixed});  // throws if refused
      for (const auto& g : after.findings)
        EXPECT_NE(g.rule, f.rule) << f.edit->change << "\n" << fixed.text;
      // Every line of the original is still there but the one the fix changes.
      std::multiset<std::string> now;
      for (const auto& line : lines_of(fixed.text)) now.insert(line);
      int gone = 0;
      for (const auto& line : lines_of(original.text)) {
        auto it = now.find(line);
        if (it == now.end())
          ++gone;
        else
          now.erase(it);
      }
      if (name.rfind("grpc/", 0) != 0) {  // JSON is written anew, its keys in order
        EXPECT_LE(gone, 1) << "more than the fixed line changed:\n" << fixed.text;
      }
      if (!kAddsLoad.count(f.rule)) {
        EXPECT_LE(peak_of(fixed), peak_of(original) + 1e-9) << f.rule << ": " << f.edit->change;
      }
    }
    EXPECT_EQ(edited, rules);
  }
  EXPECT_GE(edits, 8);
}

// A fix that belongs in another file (an Envoy route's budget, which is the
// cluster's circuit_breakers) is said in the text, with no edit.
TEST(FixEdits, AFixThatBelongsInAnotherFileHasNoEdit) {
  for (const auto& f : configs::lint_configs({fixture("envoy/route.yaml")}).findings)
    if (f.rule == "no-retry-budget") {
      EXPECT_FALSE(f.edit.has_value());
    }
}

}  // namespace
}  // namespace retrystorm
