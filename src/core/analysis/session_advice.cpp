#include "analysis/session_advice.hpp"

#include <algorithm>
#include <cmath>

#include "engines/sessions/clock.hpp"
#include "engines/sessions/session_engine.hpp"
#include "model/keys.hpp"

namespace retrystorm {

using sessions::format_minutes;
using sessions::Outcome;

LadderCheck check_ladder(const Scenario& s) {
  LadderCheck c;
  c.ladder_s = sessions::ladder_s(s);
  for (double d : c.ladder_s) c.total_s += d;
  c.deadline_s = s.client.deadline_s;
  c.exceeds = c.deadline_s > 0 && c.total_s > c.deadline_s;
  return c;
}

namespace {

std::string sessions_text(int n) {
  return std::to_string(n) + (n == 1 ? " session" : " sessions");
}

std::string percent(double share) {
  return format_percent(share);
}

double failed_share(const SessionMetrics& m) {
  return m.launched ? static_cast<double>(m.failed) / m.launched : 0;
}

// Tries one change on the same seed: its failed share, and what it does to
// occupancy and the anchor, in words.
void try_change(Advice& a, const sessions::SessionRun& run, const SessionMetrics& before,
                const std::string& path, const KeyValue& v) {
  Scenario changed = run.scenario;
  set_key(changed, path, v);
  sessions::SessionRun after_run = sessions::run_sessions(changed);
  SessionMetrics after = session_metrics(after_run);
  a.change = {{path, v}};
  a.failed_fraction = failed_share(after);
  auto anchors = [](const sessions::SessionRun& x) {
    int n = 0;
    for (const auto& r : x.sessions) n += r.anchor_done ? 1 : 0;
    return std::to_string(n);
  };
  a.why += " Same seed with the change: in flight " + format_amount(before.mean_in_flight) +
           " -> " + format_amount(after.mean_in_flight) + " on average, failed sessions " +
           percent(failed_share(before)) + " -> " + percent(failed_share(after)) + ", items done " +
           std::to_string(before.items_done) + " -> " + std::to_string(after.items_done) +
           ", anchor jobs done " + anchors(run) + " -> " + anchors(after_run) + ".";
}

int count(const sessions::SessionRun& run, const SessionMetrics& m, auto&& which) {
  int n = 0;
  for (const auto& r : run.sessions)
    if (r.start_s >= m.from_s && r.start_s < m.to_s && which(r)) ++n;
  return n;
}

}  // namespace

std::string session_verdict(const SessionMetrics& m) {
  std::string done =
      std::to_string(m.completed) + " of " + std::to_string(m.launched) + " sessions completed";
  if (m.launched == 0) return "No session was launched in the window.";
  double failed = static_cast<double>(m.failed) / m.launched;
  if (m.asleep_share >= 0.5 && failed >= 0.5)
    return "Looks like overload, is not: " + percent(m.asleep_share) +
           " of the time in flight was asleep in backoff; " + done + ".";
  if (failed >= 0.5)
    return "The dependency is down: " + done + "; failed sessions lasted " +
           format_minutes(m.mean_failed_s) + " on average.";
  if (m.failed > 0 && m.outcomes.at("killed_working") > 0)
    return "Mostly healthy, but " + std::to_string(m.outcomes.at("killed_working")) +
           " sessions ran into the deadline while working; " + done + ".";
  return "Healthy: " + done + ", " + format_amount(m.mean_in_flight) + " in flight on average.";
}

std::vector<Advice> advise_sessions(const sessions::SessionRun& run, const SessionMetrics& m) {
  const Scenario& s = run.scenario;
  std::vector<Advice> out;
  LadderCheck ladder = check_ladder(s);
  int asleep_deaths =
      count(run, m, [](const auto& r) { return r.outcome == Outcome::killed_asleep; });
  if (ladder.exceeds && !s.sessions.deadline_aware) {
    Advice a;
    a.title = "Make the backoff deadline-aware: the ladder (" + format_minutes(ladder.total_s) +
              ") is longer than the deadline (" + format_minutes(ladder.deadline_s) + ")";
    a.why = "A session whose first call meets an error sleeps into its deadline and dies asleep";
    a.why += asleep_deaths > 0 ? "; " + sessions_text(asleep_deaths) + " in the window did."
                               : ". None did in this run; the next outage will.";
    a.why += " Failing fast frees the slot at once.";
    try_change(a, run, m, "sessions.deadline_aware", true);
    out.push_back(a);
  }
  int anchor_cut = count(run, m, [](const auto& r) {
    return r.outcome == Outcome::killed_working && r.anchor_in_batch && !r.anchor_done;
  });
  if (anchor_cut > 0 && !s.sessions.anchor_first) {
    Advice a;
    a.title = "Do the anchors first when a session opens with a full batch";
    a.why =
        "Cut by the deadline with the anchor job still in the batch: " + sessions_text(anchor_cut) +
        ". Under "
        "FIFO the deadline removes the newest items. Leave the rest unread for the next tick.";
    try_change(a, run, m, "sessions.anchor_first", true);
    out.push_back(a);
  }
  if (!out.empty() && asleep_deaths == 0 && ladder.exceeds && !s.sessions.deadline_aware)
    std::rotate(out.begin(), out.begin() + 1, out.end());  // no evidence here: rank it last
  if (m.asleep_share >= 0.5) {
    Advice a;
    a.title = "Do not add concurrency: the slots are full of sleeping sessions";
    a.why = percent(m.asleep_share) + " of the time in flight was asleep in backoff, " +
            format_amount(m.mean_asleep) + " of " + format_amount(m.mean_in_flight) +
            " sessions on average. Occupancy without completions is not load.";
    out.push_back(a);
  }
  return out;
}

}  // namespace retrystorm
