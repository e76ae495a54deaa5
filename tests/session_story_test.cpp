// The scheduler incident told right (issue 16): headlines that check their
// evidence, fix one's cost in numbers, lint with the fix on, and Monte Carlo
// summaries with the per-seed spread and the share of seeds a claim holds in.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "analysis/session_advice.hpp"
#include "engines/sessions/session_engine.hpp"
#include "formats/scenario_io.hpp"
#include "formats/session_report.hpp"
#include "model/keys.hpp"
#include "preset_scenario.hpp"
#include "systems/lint.hpp"

namespace retrystorm {
namespace {

using configs::Finding;
using configs::lint_scenario;
using configs::LintReport;
using configs::Severity;

constexpr int kSeeds = 40;

using testing::preset;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* kSessionPresets[] = {"scheduler-normal-day", "scheduler-429-outage",
                                 "scheduler-429-outage-deadline-aware",
                                 "scheduler-credential-outage", "scheduler-recovery-burst"};

// The recovery burst saw no error answer: its headline names the batch the
// deadline cut, in every seed.
TEST(SessionStory, RecoveryBurstHeadlineNamesTheCutBatchInEverySeed) {
  Scenario s = preset("scheduler-recovery-burst");
  for (int seed = 1; seed <= kSeeds; ++seed) {
    s.seed = seed;
    sessions::SessionRun run = sessions::run_sessions(s);
    SessionMetrics m = session_metrics(run);
    SessionVerdict v = session_verdict(run, m);
    ASSERT_EQ(m.errors_429 + m.errors_401, 0) << seed;
    EXPECT_FALSE(has(v.headline, "dependency is down")) << seed << ": " << v.headline;
    EXPECT_TRUE(has(v.headline, "A batch cut by the deadline")) << seed << ": " << v.headline;
    EXPECT_TRUE(has(v.headline, "killed working at 2d22:")) << seed << ": " << v.headline;
    EXPECT_TRUE(has(v.claim, "2d22:00 hour is killed working")) << seed << ": " << v.claim;
  }
}

TEST(SessionStory, DeterministicRecoveryBurstHeadlineSaysWhatWasCutAndWhen) {
  SessionReport r =
      make_session_report(preset("scheduler-recovery-burst", {{"sessions.deterministic", "true"}}));
  EXPECT_EQ(r.verdict,
            "A batch cut by the deadline, not a dead dependency: the session launched at "
            "2d22:15:08 opened a full batch of 20 items and was killed working at 2d22:45:08 "
            "(after 30m00s) with 14 done and 6 cut, the anchor job among them; 0 429 and 0 401 "
            "answers in the window.");
  EXPECT_EQ(session_json(r)["verdict"]["claim"], r.claim);
}

// Items the anchor rule set aside are not cut: a session that deferred 14
// of its 20 and did the other 6 before the deadline cut nothing, and the
// headline does not blame the batch (it read "6 done and 14 cut").
TEST(SessionStory, ItemsSetAsideByTheAnchorRuleAreNotCut) {
  const std::map<std::string, std::string> sets = {{"sessions.deterministic", "true"},
                                                   {"sessions.anchor_first", "true"},
                                                   {"sessions.housekeeping_median_s", "1500"}};
  SessionReport r = make_session_report(preset("scheduler-recovery-burst", sets));
  EXPECT_FALSE(has(r.verdict, "A batch cut by the deadline")) << r.verdict;
  sessions::SessionRun run = sessions::run_sessions(preset("scheduler-recovery-burst", sets));
  const auto& first = run.sessions.front();
  EXPECT_EQ(first.items_cut(), first.items_in - first.items_deferred - first.items_done);
  // A slower anchor: the deadline cuts the anchor and the others kept with
  // it, and the headline counts those only, the deferred ones apart.
  auto slow = sets;
  slow["items.anchor_work_median_s"] = "2000";
  SessionReport cut = make_session_report(preset("scheduler-recovery-burst", slow));
  EXPECT_TRUE(has(cut.verdict, "A batch cut by the deadline")) << cut.verdict;
  EXPECT_TRUE(has(cut.verdict, "set aside by the anchor rule")) << cut.verdict;
  EXPECT_FALSE(has(cut.verdict, "and 20 cut")) << cut.verdict;
}

// A claim about the dependency needs its error answers, in every preset and seed.
TEST(SessionStory, EveryHeadlineChecksItsEvidence) {
  for (const char* name : kSessionPresets) {
    Scenario s = preset(name);
    for (int seed = 1; seed <= 5; ++seed) {
      s.seed = seed;
      sessions::SessionRun run = sessions::run_sessions(s);
      SessionMetrics m = session_metrics(run);
      SessionVerdict v = session_verdict(run, m);
      std::string what = std::string(name) + " seed " + std::to_string(seed) + ": " + v.headline;
      if (has(v.headline, "dependency is down") || has(v.headline, "asleep in backoff")) {
        EXPECT_GT(m.errors_429 + m.errors_401, 0) << what;
      }
      if (has(v.headline, "cut by the deadline") || has(v.headline, "ran into the deadline")) {
        EXPECT_GT(m.outcomes.at("killed_working"), 0) << what;
      }
    }
  }
  // Sessions that crash on a healthy API are not a dead dependency.
  Scenario crashing = preset("scheduler-normal-day", {{"sessions.crash_probability", "1"}});
  sessions::SessionRun run = sessions::run_sessions(crashing);
  SessionMetrics m = session_metrics(run);
  ASSERT_EQ(m.errors_429 + m.errors_401, 0);
  EXPECT_FALSE(has(session_verdict(run, m).headline, "dependency is down"));
}

// Sessions still in flight at the window's end did not finish: an outage
// that keeps them asleep in their ladders is no "Healthy" (it said
// "Healthy: 9 of 34 sessions completed" with 21 stuck asleep).
TEST(SessionStory, SessionsStuckInFlightAreNotHealthy) {
  Scenario s = preset("scheduler-429-outage", {{"horizon_s", "129600"},
                                               {"sessions.focus_to_s", "129600"},
                                               {"client.deadline_s", "0"},
                                               {"client.retries", "12"}});
  sessions::SessionRun run = sessions::run_sessions(s);
  SessionMetrics m = session_metrics(run);
  ASSERT_GT(2 * (m.launched - m.completed), m.launched);
  const SessionVerdict v = session_verdict(run, m);
  EXPECT_FALSE(has(v.headline, "Healthy")) << v.headline;
}

// Sessions launched in the window count as unfinished when they are still in
// flight at the run's end, and the headline says the run's end, as its rule
// counts (it said "when the window ended"): sessions that housekeep all day.
TEST(SessionStory, UnfinishedSessionsAreCountedAtTheRunsEnd) {
  const SessionReport r = make_session_report(
      preset("scheduler-normal-day", {{"sessions.housekeeping_median_s", "80000"},
                                      {"sessions.crash_probability", "0"},
                                      {"client.deadline_s", "0"}}));
  ASSERT_GT(2 * r.metrics.in_flight, r.metrics.launched);
  EXPECT_EQ(r.claim, "most sessions had not finished when the run ended");
  EXPECT_TRUE(r.verdict.starts_with("Most sessions had not finished when the run ended: "))
      << r.verdict;
  EXPECT_FALSE(has(r.verdict, "window")) << r.verdict;
}

// A window opening before the first tick (refused now: sessions_test.cpp)
// was averaged over the simulated part and multiplied by the whole window:
// "session time asleep 22.7 h" for 1.7 h. Hours asleep are the average times
// the span it was taken over.
TEST(SessionStory, HoursAsleepAreOverTheSpanAveraged) {
  Scenario s = preset("scheduler-recovery-burst", {{"api.timeline", "0 dead"}});
  s.sessions.focus_from_s = 172800;  // past validation, as a caller of the model could
  const sessions::SessionRun run = sessions::run_sessions(s);
  const SessionMetrics m = session_metrics(run);
  EXPECT_EQ(m.span_s, s.horizon_s - s.sessions.start_s);
  double asleep_s = 0;
  for (const auto& row : run.sessions)
    asleep_s += row.time_s[static_cast<int>(sessions::Occupancy::asleep)];
  ASSERT_GT(asleep_s, 0);
  EXPECT_NEAR(m.mean_asleep * m.span_s, asleep_s, 1e-6 * asleep_s);
  int told = 0;
  for (const Advice& a : advise_sessions(run, m)) {
    if (!has(a.why, "The trade-off: session time asleep")) continue;
    ++told;
    EXPECT_TRUE(has(a.why, "The trade-off: session time asleep 1.7 h -> 0.0 h")) << a.why;
    EXPECT_FALSE(has(a.why, "22.7 h")) << a.why;
  }
  EXPECT_EQ(told, 1);
}

// The retries that fit the deadline count the boot and every call's answer,
// not the sleeps alone: a 401 takes 150 s at least, so five steps of the
// ladder (930 s asleep) with the boot and six 401s end past 30 min. The
// engine draws each at its middle in deterministic mode.
TEST(SessionStory, RetriesThatFitCountTheBootAndTheAnswers) {
  EXPECT_EQ(retries_that_fit(preset("scheduler-credential-outage")), 4);
  EXPECT_EQ(retries_that_fit(preset("scheduler-429-outage-deadline-aware")), 5);  // 429s: 0.3 s
  EXPECT_EQ(retries_that_fit(preset("scheduler-429-outage")), 5);
  const std::map<std::string, std::string> slow = {{"api.auth_min_s", "300"},
                                                   {"api.auth_max_s", "300"}};
  EXPECT_EQ(retries_that_fit(preset("scheduler-credential-outage", slow)), 3);
  const std::map<std::string, std::string> wide = {{"api.auth_max_s", "450"}};
  EXPECT_EQ(retries_that_fit(preset("scheduler-credential-outage", wide)), 4);
  auto middles = wide;
  middles["sessions.deterministic"] = "true";  // boot 15 s, a 401 300 s
  EXPECT_EQ(retries_that_fit(preset("scheduler-credential-outage", middles)), 3);
  EXPECT_EQ(retries_that_fit(preset("scheduler-credential-outage", {{"client.deadline_s", "0"}})),
            6);
}

double failed_share_of(const SessionMetrics& m) {
  return m.launched ? static_cast<double>(m.failed) / m.launched : 0;
}

// The ladder that fits is offered only when its try on the same seed fails
// no larger share of the sessions and gets no fewer items done; otherwise the
// advice says it does not help, keeps the numbers and offers no change. Seed
// 7 of the credential outage offered it with "failed sessions 35.7% ->
// 57.9%, items done 26 -> 26".
TEST(SessionStory, TheLadderThatFitsIsOfferedOnlyWhenItsTryHelps) {
  int offered = 0, declined = 0;
  for (const char* name : {"scheduler-credential-outage", "scheduler-429-outage-deadline-aware"})
    for (int seed : {1, 2, 3, 7}) {
      Scenario s = preset(name);
      s.seed = seed;
      const SessionReport r = make_session_report(s);
      for (const Advice& a : r.advice) {
        if (!has(a.title, "retries that fit the deadline")) continue;
        Scenario kept = s;
        set_key(kept, "client.retries", KeyValue{static_cast<double>(retries_that_fit(s))});
        const SessionMetrics after = session_metrics(sessions::run_sessions(kept));
        const bool helps = failed_share_of(after) <= failed_share_of(r.metrics) &&
                           after.items_done >= r.metrics.items_done;
        const std::string what =
            std::string(name) + " seed " + std::to_string(seed) + ": " + a.title + "\n" + a.why;
        EXPECT_TRUE(has(a.why, "Same seed with the change: in flight ")) << what;
        if (helps) {
          ++offered;
          EXPECT_TRUE(a.title.starts_with("Keep the retries that fit the deadline: ")) << what;
          EXPECT_FALSE(a.change.empty()) << what;
        } else {
          ++declined;
          EXPECT_EQ(a.title, "Keeping the retries that fit the deadline does not help in this run")
              << what;
          EXPECT_TRUE(has(a.why, "This change does not help in this run: ")) << what;
          EXPECT_TRUE(a.change.empty()) << what;
        }
      }
    }
  EXPECT_GT(offered, 0);   // the 429 outage: failed sessions 100% -> 96%, items done 6 -> 26
  EXPECT_GT(declined, 0);  // the credential outage: two hours of 401s outlast the retries
  Scenario seven = preset("scheduler-credential-outage");
  seven.seed = 7;
  const SessionReport r = make_session_report(seven);
  const std::string text = session_text(r);
  EXPECT_FALSE(has(text, "Keep the retries that fit the deadline:")) << text;
  EXPECT_TRUE(has(text, "Keeping the retries that fit the deadline does not help in this run"))
      << text;
  EXPECT_TRUE(has(text, "A ladder of 4 steps (client.retries = 4)")) << text;
}

// The anchor-first advice tells of the first cut session in the window, the
// one it counts (it told of one launched the day before).
TEST(SessionStory, AnchorFirstAdviceNamesASessionOfTheWindow) {
  Scenario s = preset("scheduler-429-outage",
                      {{"sessions.focus_from_s", "172800"}, {"sessions.focus_to_s", "259200"}});
  s.seed = 8;
  const SessionReport r = make_session_report(s);
  int told = 0;
  for (const Advice& a : r.advice) {
    std::smatch at;
    if (!std::regex_search(a.why, at, std::regex("The session launched at (\\d+)d"))) continue;
    ++told;
    EXPECT_EQ(at[1], "2") << a.why;
  }
  EXPECT_EQ(told, 1);
}

TEST(SessionStory, FixOneShowsItsCostInNumbers) {
  SessionReport r = make_session_report(preset("scheduler-429-outage"));
  ASSERT_FALSE(r.advice.empty());
  const Advice& aware = r.advice.front();
  ASSERT_TRUE(has(aware.title, "deadline-aware")) << aware.title;
  EXPECT_TRUE(std::regex_search(
      aware.why, std::regex("The trade-off: session time asleep [0-9.]+ h -> [0-9.]+ h, items "
                            "done ([0-9]+) -> ([0-9]+)")))
      << aware.why;
  // Seed 1's day one. 28 -> 6 since issue 16's item costs (cheaper pings,
  // longer housekeeping: docs/sessions.md): the few sessions fix one lets
  // finish between first errors get more items done; it was 37 -> 4.
  EXPECT_TRUE(has(aware.why, "items done 28 -> 6")) << aware.why;
  EXPECT_TRUE(has(aware.why, "Keeping the 5 retries that fit the deadline instead")) << aware.why;
}

// With the fix on, the sessions fail fast: nothing says they sleep into the
// deadline, and the advice offers the ladder that fits with its numbers.
TEST(SessionStory, DeadlineAwareRunDoesNotClaimSessionsSleepIntoTheDeadline) {
  SessionReport r = make_session_report(preset("scheduler-429-outage-deadline-aware"));
  ASSERT_GT(r.metrics.outcomes.at("failed_fast"), 0);
  std::string text = session_text(r);
  EXPECT_FALSE(has(text, "sleeps into its deadline")) << text;
  EXPECT_TRUE(has(text, "cut by the deadline-aware rule")) << text;
  EXPECT_TRUE(has(text, "Keep the retries that fit the deadline")) << text;
  EXPECT_TRUE(has(text, "items done 28 -> 6")) << text;  // as above
  auto ladder = session_json(r)["ladder"];
  EXPECT_EQ(ladder["longer_than_deadline"], true);
  EXPECT_EQ(ladder["deadline_aware"], true);
  EXPECT_EQ(ladder["exceeds_deadline"], false);
}

TEST(SessionStory, LintSaysTheDeadlineAwareRuleCutsTheLadder) {
  LintReport r = lint_scenario(preset("scheduler-429-outage-deadline-aware"), "aware");
  EXPECT_EQ(r.errors, 0);
  bool found = false;
  for (const Finding& f : r.findings) {
    if (f.rule != "ladder-exceeds-deadline") continue;
    found = true;
    EXPECT_EQ(f.severity, Severity::info);
    EXPECT_TRUE(has(f.message, "cut by") || has(f.message, "cuts it")) << f.message;
    EXPECT_TRUE(has(f.message, "deadline-aware rule")) << f.message;
    // What the engine does with this ladder (its middles add up past the
    // deadline): every session fails fast on its first error.
    EXPECT_TRUE(has(f.message, "every session fails fast on its first error")) << f.message;
  }
  EXPECT_TRUE(found);
  sessions::SessionRun run = sessions::run_sessions(preset("scheduler-429-outage-deadline-aware"));
  int failed_fast = 0;
  for (const auto& row : run.sessions) {
    if (row.outcome != session_log::Outcome::failed_fast) continue;
    ++failed_fast;
    EXPECT_EQ(row.n_429 + row.n_401, 1) << row.session_id;
  }
  EXPECT_GT(failed_fast, 0);
  // The same ladder without the fix stays an error.
  EXPECT_EQ(lint_scenario(preset("scheduler-429-outage"), "plain").errors, 1);
}

TEST(SessionStory, SummaryGivesTheSpreadAndClampsCountsAtZero) {
  MetricSummary m = summarize({0, 0, 0, 0, 0, 0, 0, 5}, 0);
  EXPECT_EQ(m.low, 0);  // the t interval would go below zero
  EXPECT_GT(summarize({0, 0, 0, 0, 0, 0, 0, 5}).mean - summarize({0, 0, 0, 0, 0, 0, 0, 5}).low,
            m.mean);
  EXPECT_EQ(m.min, 0);
  EXPECT_EQ(m.median, 0);
  EXPECT_EQ(m.max, 5);
  MetricSummary odd = summarize({3, 1, 2});
  EXPECT_EQ(odd.median, 2);
  EXPECT_EQ(summarize({1, 2, 3, 4}).median, 2.5);
  EXPECT_EQ(floor_of({-1, 2}), -INFINITY);
  EXPECT_EQ(floor_of({0, 2}), 0);
}

TEST(SessionStory, MonteCarloReportsSpreadAndTheShareOfSeedsTheClaimHoldsIn) {
  Scenario s = preset("scheduler-recovery-burst");
  s.runs = kSeeds;
  SessionReport r = make_session_report(s);
  nlohmann::json j = session_json(r);
  for (const auto& [name, m] : j["montecarlo"]["metrics"].items()) {
    if (m["n"] == 0) continue;
    for (const char* field : {"mean", "low", "high", "min", "median", "max"})
      ASSERT_TRUE(m.contains(field)) << name << " " << field;
    EXPECT_LE(m["min"].get<double>(), m["median"].get<double>()) << name;
    EXPECT_LE(m["median"].get<double>(), m["max"].get<double>()) << name;
    if (name != "launches_429_correlation") {
      EXPECT_GE(m["low"].get<double>(), 0) << name;
    }
  }
  auto claim = j["montecarlo"]["headline_claim"];
  EXPECT_EQ(claim["claim"], r.claim);
  EXPECT_EQ(claim["runs"], kSeeds);
  EXPECT_EQ(claim["seeds"], kSeeds);  // the 22:xx session is cut in every seed
  std::string text = session_text(r);
  EXPECT_TRUE(has(text, "holds in 40/40 seeds")) << text;
  EXPECT_TRUE(has(text, "min / median / max")) << text;
}

TEST(SessionStory, SessionTextsSayOneSessionNotOneSessions) {
  std::regex plural_after_one("(^|[^0-9.])1 (sessions|attempts|items|answers|retries)\\b");
  for (const char* name : kSessionPresets)
    for (const char* deterministic : {"false", "true"}) {
      SessionReport r =
          make_session_report(preset(name, {{"sessions.deterministic", deterministic}}));
      std::string text = session_text(r);
      EXPECT_FALSE(std::regex_search(text, plural_after_one)) << name << "\n" << text;
    }
}

// The recovery burst's focus opens at 22:15, mid-hour: the text's hour table
// still shows the 22:00 hour (the burst's launch), as the JSON does.
TEST(SessionStory, RecoveryBurstHourTableShowsThe2200Hour) {
  SessionReport r =
      make_session_report(preset("scheduler-recovery-burst", {{"sessions.deterministic", "true"}}));
  std::string text = session_text(r);
  std::smatch row;
  ASSERT_TRUE(std::regex_search(text, row, std::regex("\\n  2d22:00 +([0-9]+) "))) << text;
  bool in_json = false;
  const nlohmann::json doc = session_json(r);
  for (const auto& h : doc["hours"])
    if (h["clock"].get<std::string>().starts_with("2d22:00")) {
      in_json = true;
      EXPECT_EQ(std::stod(row[1].str()), h["launches"].get<double>());
      EXPECT_GE(h["launches"].get<double>(), 1);
    }
  EXPECT_TRUE(in_json);
}

// Issue 16, item 3: anchor counts over the run stay 1 -> 1 on the recovery
// burst; the advice says what the rule changes where it matters: the 22:15
// session reaches the anchor before its deadline.
TEST(SessionStory, AnchorFirstAdviceSaysThe2215SessionReachesTheAnchorInTime) {
  SessionReport r =
      make_session_report(preset("scheduler-recovery-burst", {{"sessions.deterministic", "true"}}));
  const Advice* anchor = nullptr;
  for (const Advice& a : r.advice)
    for (const auto& [path, value] : a.change)
      if (path == "sessions.anchor_first") anchor = &a;
  ASSERT_NE(anchor, nullptr);
  EXPECT_TRUE(has(anchor->why,
                  "The session launched at 2d22:15:08: the anchor not done before "
                  "the deadline -> done before the deadline (started "))
      << anchor->why;
  Scenario with = preset("scheduler-recovery-burst",
                         {{"sessions.deterministic", "true"}, {"sessions.anchor_first", "true"}});
  sessions::SessionRun run = sessions::run_sessions(with);
  bool reached = false;
  for (const auto& row : run.sessions)
    if (row.anchor_in_batch && std::abs(row.start_s - (2 * 86400 + 22 * 3600 + 15 * 60)) < 60)
      reached = row.anchor_done && row.anchor_started_after_s < with.client.deadline_s;
  EXPECT_TRUE(reached);
}

}  // namespace
}  // namespace retrystorm
