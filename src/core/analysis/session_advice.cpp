#include "analysis/session_advice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engines/sessions/clock.hpp"
#include "engines/sessions/session_engine.hpp"
#include "engines/sessions/timeline.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"

namespace retrystorm {

using sessions::format_minutes;
using sessions::Outcome;

LadderCheck check_ladder(const Scenario& s) {
  LadderCheck c;
  c.ladder_s = sessions::ladder_s(s);
  for (double d : c.ladder_s) c.total_s += d;
  c.deadline_s = s.client.deadline_s;
  c.longer = c.deadline_s > 0 && c.total_s > c.deadline_s;
  c.deadline_aware = s.sessions.deadline_aware;
  c.exceeds = c.longer && !c.deadline_aware;
  return c;
}

namespace {

// The quickest the engine draws a value in U(low, high): at its middle in
// deterministic mode (Draws::uniform), else at low.
double quickest_s(const Scenario& s, double low, double high) {
  return s.sessions.deterministic ? (low + high) / 2 : low;
}

// The quickest error answer the timeline gives: a 429 while the API is dead
// or rate limited, a 401 while it refuses credentials; 0 when it gives none.
// Only an error walks the ladder on (a success resets it), so each attempt
// of a ladder walked to its end takes at least this long; a 401 takes
// minutes.
double quickest_error_answer_s(const Scenario& s) {
  double quickest = INFINITY;
  const sessions::ApiTimeline timeline(s.api.timeline);  // named: phases() refers into it
  for (const sessions::ApiPhase& p : timeline.phases()) {
    if (p.state == sessions::ApiState::auth_fail)
      quickest = std::min(quickest, quickest_s(s, s.api.auth_min_s, s.api.auth_max_s));
    else if (p.state == sessions::ApiState::dead ||
             (p.state == sessions::ApiState::rate_limited && p.p > 0))
      quickest = std::min(quickest, quickest_s(s, s.api.error_min_s, s.api.error_max_s));
  }
  return std::isfinite(quickest) ? quickest : 0;
}

}  // namespace

int retries_that_fit(const Scenario& s) {
  const LadderCheck ladder = check_ladder(s);
  if (ladder.deadline_s <= 0) return static_cast<int>(ladder.ladder_s.size());
  const double answer = quickest_error_answer_s(s);
  // The deadline counts from the launch: the boot, then the first call.
  double elapsed = quickest_s(s, s.sessions.boot_min_s, s.sessions.boot_max_s) + answer;
  int fits = 0;
  for (double sleep : ladder.ladder_s) {
    elapsed += sleep + answer;  // the retry's sleep, then its call answered
    if (elapsed > ladder.deadline_s) break;
    ++fits;
  }
  return fits;
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

struct Tried {
  sessions::SessionRun run;
  SessionMetrics metrics;
};

Tried run_with(const sessions::SessionRun& run, const std::string& path, const KeyValue& v) {
  Scenario changed = run.scenario;
  set_key(changed, path, v);
  Tried t{sessions::run_sessions(changed), {}};
  t.metrics = session_metrics(t.run);
  return t;
}

int anchors_done(const sessions::SessionRun& x) {
  int n = 0;
  for (const auto& r : x.sessions) n += r.anchor_done ? 1 : 0;
  return n;
}

// Session time asleep in the window, in hours: what the slots paid for the
// ladder. Over the time the average was taken over (the window within the
// simulated run), not the window's length.
double hours_asleep(const SessionMetrics& m) {
  return m.mean_asleep * m.span_s / text::kHour;
}

std::string hours_text(double h) {
  return text::fixed_text(h, 1) + " h";
}

// Tries one change on the same seed: its failed share, and what it does to
// occupancy and the anchor, in words.
Tried try_change(Advice& a, const sessions::SessionRun& run, const SessionMetrics& before,
                 const std::string& path, const KeyValue& v) {
  Tried after = run_with(run, path, v);
  a.change = {{path, v}};
  a.failed_fraction = failed_share(after.metrics);
  a.why += " Same seed with the change: in flight " + format_amount(before.mean_in_flight) +
           " -> " + format_amount(after.metrics.mean_in_flight) + " on average, failed sessions " +
           percent(failed_share(before)) + " -> " + percent(failed_share(after.metrics)) +
           ", items done " + std::to_string(before.items_done) + " -> " +
           std::to_string(after.metrics.items_done) + ", anchor jobs done " +
           std::to_string(anchors_done(run)) + " -> " + std::to_string(anchors_done(after.run)) +
           ".";
  return after;
}

// The first session launched in the window [from_s, to_s) that the deadline
// cut with the anchor still in its batch (the post-mortem's 22:15 session);
// null when none was.
const sessions::SessionRow* anchor_cut_session(const sessions::SessionRun& x, double from_s,
                                               double to_s) {
  for (const auto& r : x.sessions)
    if (r.start_s >= from_s && r.start_s < to_s && r.outcome == Outcome::killed_working &&
        r.anchor_in_batch && !r.anchor_done)
      return &r;
  return nullptr;
}

// The session of `x` that claimed the anchor nearest `start_s`: the same
// launch in a run with one rule changed.
const sessions::SessionRow* anchor_session_near(const sessions::SessionRun& x, double start_s) {
  const sessions::SessionRow* best = nullptr;
  for (const auto& r : x.sessions)
    if (r.anchor_in_batch &&
        (!best || std::abs(r.start_s - start_s) < std::abs(best->start_s - start_s)))
      best = &r;
  return best;
}

std::string anchor_fate(const sessions::SessionRow* r) {
  if (!r) return "not claimed";
  if (!r->anchor_done) return "not done before the deadline";
  return "done before the deadline (started " + format_minutes(r->anchor_started_after_s) +
         " into the session)";
}

// Anchor counts over a whole run hide the rule's point: the post-mortem asks
// whether the session the deadline cut reaches the anchor in time. Says so
// for that session, without the rule and with it.
std::string anchor_first_effect(const sessions::SessionRun& before, const SessionMetrics& m,
                                const sessions::SessionRun& after) {
  const sessions::SessionRow* cut = anchor_cut_session(before, m.from_s, m.to_s);
  if (!cut) return "";
  const sessions::SessionRow* same = anchor_session_near(after, cut->start_s);
  return " The session launched at " + sessions::format_clock(cut->start_s) + ": the anchor " +
         anchor_fate(cut) + " -> " + anchor_fate(same) + ".";
}

// A change tried on the same seed helps when it fails no larger share of
// the sessions and gets no fewer items done; one that does either is shown
// with its numbers, not offered.
bool helps(const SessionMetrics& before, const SessionMetrics& after) {
  return failed_share(after) <= failed_share(before) && after.items_done >= before.items_done;
}

// What a change that does not help did, in words.
std::string what_got_worse(const SessionMetrics& before, const SessionMetrics& after) {
  const bool more_failed = failed_share(after) > failed_share(before);
  const bool fewer_done = after.items_done < before.items_done;
  if (more_failed && fewer_done) return "more of the sessions fail and fewer items get done";
  return more_failed ? "more of the sessions fail" : "fewer items get done";
}

// Keeping the retries that fit the deadline: offered when it helps on the
// same seed, else said not to help, with the same numbers and no change to
// try.
void conclude_ladder_that_fits(Advice& a, const SessionMetrics& before,
                               const SessionMetrics& after) {
  if (helps(before, after)) {
    a.title =
        "Keep the retries that fit the deadline: with this ladder, deadline-aware backoff "
        "fails a session on its first error";
    return;
  }
  a.title = "Keeping the retries that fit the deadline does not help in this run";
  a.why += " This change does not help in this run: " + what_got_worse(before, after) + ".";
  a.change.clear();
}

// With fix one on and a ladder longer than the deadline, every session fails
// on its first error: the retries that would have got items done are gone.
// Tries the ladder that fits, and offers it when it helps, with its numbers
// and the fix's own.
void advise_ladder_that_fits(std::vector<Advice>& out, const sessions::SessionRun& run,
                             const SessionMetrics& m, const LadderCheck& ladder) {
  int fits = retries_that_fit(run.scenario);
  int fast = m.outcomes.at("failed_fast");
  if (!ladder.longer || !ladder.deadline_aware || fast == 0 || fits == 0) return;
  Tried sleeping = run_with(run, "sessions.deadline_aware", false);
  Advice a;
  a.why = "Failed fast: " + sessions_text(fast) +
          " in the window. The trade-off on the same seed, without the rule: session time "
          "asleep " +
          hours_text(hours_asleep(sleeping.metrics)) + " -> " + hours_text(hours_asleep(m)) +
          " with it, items done " + std::to_string(sleeping.metrics.items_done) + " -> " +
          std::to_string(m.items_done) + ". A ladder of " + std::to_string(fits) +
          " steps (client.retries = " + std::to_string(fits) +
          ") ends before the deadline, counting the boot and each call's quickest error answer, "
          "so a session retries while time remains.";
  Tried kept = try_change(a, run, m, "client.retries", static_cast<double>(fits));
  conclude_ladder_that_fits(a, m, kept.metrics);
  out.push_back(a);
}

// Fix one's cost in numbers: slot time asleep against items done, for the
// fix and for the variant that keeps the retries that fit the deadline.
std::string deadline_aware_cost(const sessions::SessionRun& run, const SessionMetrics& before,
                                const SessionMetrics& aware) {
  std::string out = " The trade-off: session time asleep " + hours_text(hours_asleep(before)) +
                    " -> " + hours_text(hours_asleep(aware)) + ", items done " +
                    std::to_string(before.items_done) + " -> " + std::to_string(aware.items_done);
  if (aware.items_done >= before.items_done) return out + ".";
  out += ": failing fast on the first error also drops the retries that got items done.";
  int fits = retries_that_fit(run.scenario);
  if (fits == 0) return out;
  Tried kept = run_with(run, "client.retries", static_cast<double>(fits));
  return out + " Keeping the " + std::to_string(fits) +
         " retries that fit the deadline instead (client.retries = " + std::to_string(fits) +
         "): session time asleep " + hours_text(hours_asleep(kept.metrics)) + ", items done " +
         std::to_string(kept.metrics.items_done) + ", failed sessions " +
         percent(failed_share(kept.metrics)) + ".";
}

int count(const sessions::SessionRun& run, const SessionMetrics& m, auto&& which) {
  int n = 0;
  for (const auto& r : run.sessions)
    if (r.start_s >= m.from_s && r.start_s < m.to_s && which(r)) ++n;
  return n;
}

}  // namespace

namespace {

std::string plural(int n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool saw_errors(const sessions::SessionRow& r) {
  return r.n_429 + r.n_401 > 0;
}

// Failures the dependency's answers caused: slept into the deadline, ran out
// of ladder, failed fast on an error, or were cut with errors seen.
int error_failures(const sessions::SessionRun& run, const SessionMetrics& m) {
  return count(run, m, [](const auto& r) {
    return r.outcome != Outcome::completed && r.outcome != Outcome::in_flight &&
           r.outcome != Outcome::crashed && saw_errors(r);
  });
}

// The post-mortem's disease: items left undone in a full batch, or the
// anchor among them. A session killed on its last item of a small batch is
// a slow session, not a batch too large for the deadline.
bool cut_the_batch(const sessions::SessionRow& r, int batch_cap) {
  return r.items_cut() > 0 && (r.items_in >= batch_cap || (r.anchor_in_batch && !r.anchor_done));
}

// The first session of the window the deadline cut while it worked, with no
// error answer: a batch too large for the deadline, not a sick dependency.
const sessions::SessionRow* first_batch_cut(const sessions::SessionRun& run,
                                            const SessionMetrics& m) {
  int batch_cap = run.scenario.sessions.batch_cap;
  for (const auto& r : run.sessions)
    if (r.start_s >= m.from_s && r.start_s < m.to_s && r.outcome == Outcome::killed_working &&
        !saw_errors(r) && cut_the_batch(r, batch_cap))
      return &r;
  return nullptr;
}

// "2d22:00": the hour a session launched in, a claim that holds across
// seeds whose launch delays differ by seconds. (Not the first seven characters
// of the clock: from day 10 on they cut the hour short, "10d22:0".)
std::string hour_of(double t_s) {
  return text::hour_label(static_cast<int64_t>(std::floor(t_s / text::kHour)));
}

// What was cut and when, from the session's own row.
std::string batch_cut_headline(const sessions::SessionRow& r, const Scenario& s,
                               const SessionMetrics& m) {
  bool full = r.items_in >= s.sessions.batch_cap;
  std::string out =
      "A batch cut by the deadline, not a dead dependency: the session launched at " +
      sessions::format_clock(r.start_s) + " opened " + (full ? "a full batch of " : "a batch of ") +
      plural(r.items_in, "item", "items") + " and was killed working at " +
      sessions::format_clock(r.end_s) + " (after " + format_minutes(r.duration_s()) + ") with " +
      std::to_string(r.items_done) + " done and " + std::to_string(r.items_cut()) + " cut";
  if (r.items_deferred > 0)
    out += " (" + std::to_string(r.items_deferred) + " set aside by the anchor rule)";
  if (r.anchor_in_batch && !r.anchor_done) out += ", the anchor job among them";
  return out + "; " + std::to_string(m.errors_429) + " 429 and " + std::to_string(m.errors_401) +
         " 401 answers in the window.";
}

}  // namespace

// Every rule checks its evidence: a claim about the dependency needs its
// error answers; a claim about the deadline needs a session it cut.
SessionVerdict session_verdict(const sessions::SessionRun& run, const SessionMetrics& m) {
  std::string done = std::to_string(m.completed) + " of " +
                     plural(m.launched, "session", "sessions") + " completed";
  if (m.launched == 0) return {"no session launched", "No session was launched in the window."};
  double failed = static_cast<double>(m.failed) / m.launched;
  // Sessions still in flight at the run's end (launched in the window) did
  // not finish either: a stuck one asleep in its ladder is not a healthy one.
  double unfinished = static_cast<double>(m.launched - m.completed) / m.launched;
  bool errors = m.errors_429 + m.errors_401 > 0;
  bool error_driven = m.failed > 0 && 2 * error_failures(run, m) >= m.failed;
  if (errors && m.asleep_share >= 0.5 && unfinished >= 0.5)
    return {"looks like overload, is not",
            "Looks like overload, is not: " + percent(m.asleep_share) +
                " of the time in flight was asleep in backoff; " + done + "."};
  if (errors && error_driven && failed >= 0.5)
    return {"the dependency is down",
            "The dependency is down: " + done + "; failed sessions lasted " +
                format_minutes(m.mean_failed_s) + " on average, " + std::to_string(m.errors_429) +
                " 429 and " + std::to_string(m.errors_401) + " 401 answers."};
  if (const auto* cut = first_batch_cut(run, m))
    return {"a session launched in the " + hour_of(cut->start_s) +
                " hour is killed working by the deadline, with no error answer",
            batch_cut_headline(*cut, run.scenario, m)};
  int killed = m.outcomes.at("killed_working");
  if (m.failed > 0 && killed > 0)
    return {"sessions ran into the deadline while working",
            "Mostly healthy, but " + plural(killed, "session", "sessions") +
                " ran into the deadline while working; " + done + "."};
  if (failed >= 0.5)
    return {"sessions failed without error answers",
            "Sessions failed without errors from the dependency: " + done + "."};
  if (unfinished >= 0.5)
    return {"most sessions had not finished when the run ended",
            "Most sessions had not finished when the run ended: " + done + ", " +
                std::to_string(m.in_flight) + " still in flight."};
  return {"healthy",
          "Healthy: " + done + ", " + format_amount(m.mean_in_flight) + " in flight on average."};
}

std::vector<Advice> advise_sessions(const sessions::SessionRun& run, const SessionMetrics& m) {
  const Scenario& s = run.scenario;
  std::vector<Advice> out;
  LadderCheck ladder = check_ladder(s);
  int asleep_deaths =
      count(run, m, [](const auto& r) { return r.outcome == Outcome::killed_asleep; });
  if (ladder.exceeds) {
    Advice a;
    a.title = "Make the backoff deadline-aware: the ladder (" + format_minutes(ladder.total_s) +
              ") is longer than the deadline (" + format_minutes(ladder.deadline_s) + ")";
    // Claims a session dies asleep only when one did in this run.
    a.why = asleep_deaths > 0 ? "A session whose first call meets an error sleeps into its "
                                "deadline and dies asleep; " +
                                    sessions_text(asleep_deaths) + " in the window did."
                              : "A session whose first call meets an error would sleep into its "
                                "deadline; none did in this run, the next outage will.";
    a.why += " Failing fast frees the slot at once.";
    Tried aware = try_change(a, run, m, "sessions.deadline_aware", true);
    a.why += deadline_aware_cost(run, m, aware.metrics);
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
    Tried first = try_change(a, run, m, "sessions.anchor_first", true);
    a.why += anchor_first_effect(run, m, first.run);
    out.push_back(a);
  }
  advise_ladder_that_fits(out, run, m, ladder);
  if (!out.empty() && asleep_deaths == 0 && ladder.exceeds)
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
