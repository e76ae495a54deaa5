// The ranked diagnosis of an incident log: each finding names a disease the
// post-mortem's author had to find by hand, the lines of evidence that point
// to it, and its fix. Scores only rank findings; each starts at a base that
// its defining evidence earns and grows with the evidence that confirms it.
#include <algorithm>
#include <cmath>

#include "analysis/incident/accumulator.hpp"
#include "analysis/summary.hpp"

namespace retrystorm::incident {

namespace {

constexpr double kHealthyFailShare = 0.15;  // a day this clean is no incident
constexpr double kErringFailures = 0.7;     // failures that met errors, for a dead dependency
constexpr double kPinnedMajority = 0.5;     // failures pinned to the deadline
constexpr double kAsleepMajority = 0.5;     // fake saturation: asleep share of occupancy
constexpr double kOverloadCorrelation = 0.5;
constexpr double kBusy = 0.8;  // utilization of a busy hour

std::string num(double v) {
  return format_amount(v);
}
std::string pct(double f) {
  return format_percent(f);
}

std::string status_of(const Report& r) {
  if (r.errors.lines_429 >= r.errors.lines_401 && r.errors.lines_429 > 0) return "429";
  if (r.errors.lines_401 > 0) return "401";
  return "error";
}

// The longest run of hours with errors and sessions in flight but no completion.
std::vector<int64_t> longest_dead_stretch(const Report& r) {
  std::vector<int64_t> best, cur;
  for (const auto& h : r.hours) {
    if (h.errors > 0 && h.completions == 0 && h.in_flight > 0) {
      cur.push_back(h.hour);
      if (cur.size() > best.size()) best = cur;
    } else {
      cur.clear();
    }
  }
  return best;
}

void dead_dependency(const Report& r, std::vector<Diagnosis>& out) {
  const ErrorSignal& e = r.errors;
  double related = r.failed - r.crashed;  // crashes are unrelated to the dependency
  if (related < 3 || e.failed_with_errors < kErringFailures * related) return;
  const FailureLoad& fl = r.failure_load;
  auto stretch = longest_dead_stretch(r);
  std::string status = status_of(r);
  Diagnosis f{"dead_dependency",
              "Dead dependency: the " + status + " answers, not load, failed the " + r.unit,
              0.6,
              {},
              ""};
  f.evidence.push_back(num(e.failed_with_errors) + " of " + num(r.failed) + " failed " + r.unit +
                       " met " + status + " answers (" + num(e.lines) + " error lines in all).");
  if (fl.low_load_failing.size() >= 2) {
    f.score += 0.3;
    f.evidence.push_back("Quiet hours failed too: " + hour_ranges(fl.low_load_failing) + ", " +
                         num(fl.low_load_failed) + " of " + num(fl.low_load_sessions) + " " +
                         r.unit + " failed with at most " + num(fl.low_load_peak) +
                         " in flight. Contention would let a quiet hour through.");
  }
  if (stretch.size() >= 3) {
    f.score += 0.1;
    f.evidence.push_back("No completion for " + num(double(stretch.size())) +
                         " hours with errors in every one: " + hour_ranges(stretch) + ".");
  }
  // The true queue, which the batch counter hides: a backlog the sessions
  // claim and hand back, waiting on the dependency rather than on slots.
  if (std::string q = queue_at_open_text(r); !q.empty())
    f.evidence.push_back(q + " The backlog waits on the dependency, not on free slots.");
  if (known(fl.correlation))
    f.evidence.push_back(
        "Failure share against load, by hour: correlation " + num(fl.correlation) +
        (fl.correlation < kOverloadCorrelation ? " (failures do not follow load)." : "."));
  f.fix = status == "401"
              ? "Restore the credentials; meanwhile make sessions fail fast on 401 instead of "
                "sleeping through the ladder. More slots or less load will not help."
              : "Restore or fail over the dependency (the service rate is near zero while it "
                "answers " +
                    status +
                    "); more slots or shedding load will not help. Meanwhile "
                    "make sessions fail fast so they stop holding slots.";
  out.push_back(f);
}

std::string ladder_sum_text(const LoggedLadder& l) {
  std::string sum;
  for (double s : l.steps_s) sum += (sum.empty() ? "" : " + ") + span_label(s);
  return sum + " = " + span_label(l.sum_s);
}

void ladder_longer_than_deadline(const Report& r, std::vector<Diagnosis>& out) {
  const Durations& d = r.durations;
  const LoggedLadder& l = r.ladder;
  bool pinned = known(d.pinned_share) && d.pinned_share >= kPinnedMajority && d.failures >= 3;
  if (!pinned) return;  // a long ladder whose sessions fail fast is already fixed
  bool longer = known(l.over_s) && l.over_s > 0;
  if (known(l.over_s) && !longer) return;
  Diagnosis f{"ladder_longer_than_deadline",
              longer ? "The backoff ladder is longer than the deadline"
                     : "Failures pinned to the deadline: likely a ladder longer than it",
              longer ? 0.95 : 0.7,
              {},
              ""};
  if (longer)
    f.evidence.push_back("Ladder (" + l.source + "): " + ladder_sum_text(l) + " against a " +
                         span_label(l.deadline_s) + " deadline: " + span_label(l.over_s) +
                         " too long. A session whose first call fails cannot finish.");
  f.evidence.push_back(num(d.pinned) + " of " + num(d.failures) + " failed " + r.unit + " (" +
                       pct(d.pinned_share) + ") ended within a minute of the " +
                       span_label(d.deadline_s) + " deadline (" + d.deadline_source + ").");
  for (const auto& [name, n] : r.outcomes)
    if (name == "killed_asleep")
      f.evidence.push_back(num(n) + " " + r.unit + " were killed asleep in backoff.");
  if (known(d.median_ok_s))
    f.evidence.push_back("Durations are bimodal: completed " + r.unit + " take a median " +
                         span_label(d.median_ok_s) + ", failed ones " +
                         span_label(d.median_failed_s) + ".");
  f.fix =
      "Make backoff deadline-aware: before sleeping, fail fast when the rest of the ladder "
      "cannot finish before the deadline. Or shorten the ladder so its sum, with the calls, "
      "fits inside the deadline.";
  out.push_back(f);
}

void fake_saturation(const Report& r, std::vector<Diagnosis>& out) {
  const FakeSaturation& s = r.fake;
  if (s.hours.empty() || r.errors.lines <= 0) return;
  bool asleep = known(s.asleep_share) && s.asleep_share >= kAsleepMajority;
  if (known(s.asleep_share) && !asleep) return;
  Diagnosis f{"fake_saturation",
              "Retry-driven fake saturation: the slots are full of sleepers",
              asleep ? 0.85 : 0.55,
              {},
              ""};
  f.evidence.push_back(hour_ranges(s.hours) + ": " + num(s.in_flight) + " in flight on average " +
                       "against a ceiling of " + num(r.ceiling) + " (" + r.ceiling_source + "), " +
                       num(s.completions_per_hour) + " completions an hour.");
  f.evidence.push_back(fake_saturation_threshold_text(s.threshold));
  if (asleep)
    f.evidence.push_back(pct(s.asleep_share) + " of that occupancy was asleep in backoff (" +
                         r.occupancy.source + ").");
  else
    f.evidence.push_back(
        "How much of it was asleep is unknown: give events.jsonl or the "
        "time_asleep_s columns.");
  if (r.errors.nearly_constant)
    f.evidence.push_back("Error lines per failing session are nearly constant (" +
                         num(r.errors.per_erring_session) +
                         "): the error curve counts sessions, not demand.");
  f.fix =
      "Count sessions asleep in backoff apart from those in service, and watch goodput "
      "beside occupancy. Cap redeliveries and fail fast so sleepers do not hold slots; more "
      "slots only hold more sleepers.";
  out.push_back(f);
}

}  // namespace

std::string fake_saturation_threshold_text(double threshold) {
  return "Near the ceiling means L at least " + pct(threshold) +
         " of it: below that an hour has room, so few completions mean little demand; "
         "at it, a pool completing at most one session an hour (or a tenth of its launches) "
         "is held by sessions that are not finishing.";
}

std::string queue_at_open_text(const Report& r) {
  const HourRow* top = nullptr;
  for (const auto& h : r.hours)
    if (known(h.queue_max) && (!top || h.queue_max > top->queue_max)) top = &h;
  if (!top) return "";
  std::string counter = known(top->counter_max)
                            ? " (the batch counter showed at most " + num(top->counter_max) + ")"
                            : "";
  return "Longest true queue at a session open: " + num(top->queue_max) + " unread items in the " +
         hour_label(top->hour) + " hour" + counter + ".";
}

namespace {

void batch_cuts_newest(const Report& r, std::vector<Diagnosis>& out) {
  const BatchCut& b = r.batch;
  double cut = std::max(b.killed_working_full, b.anchor_cut);
  if (cut < 1) return;
  Diagnosis f{"batch_deadline_cuts_newest",
              "The batch deadline cuts the newest items: full batches killed while working",
              b.anchor_cut >= 1 ? 0.75 : 0.5,
              {},
              ""};
  f.evidence.push_back(num(b.killed_working) + " " + r.unit +
                       " were killed working at the "
                       "deadline; " +
                       num(b.killed_working_full) +
                       " had opened with 16 or "
                       "more items.");
  if (b.anchor_cut >= 1)
    f.evidence.push_back(num(b.anchor_cut) +
                         " had the anchor in their batch and did not finish it.");
  std::string at;
  for (double t : b.examples_start_s) at += (at.empty() ? "" : ", ") + format_clock(t);
  if (!at.empty()) f.evidence.push_back("Started at " + at + ".");
  if (std::string q = queue_at_open_text(r); !q.empty()) f.evidence.push_back(q);
  f.fix =
      "When a session opens with 16 or more items, do the anchors first and at most five "
      "others; leave the rest unread for the next tick (anchor-first rule).";
  out.push_back(f);
}

void genuine_overload(const Report& r, std::vector<Diagnosis>& out) {
  const FailureLoad& fl = r.failure_load;
  if (!known(fl.correlation) || fl.correlation < kOverloadCorrelation || r.failed < 3) return;
  if (known(r.durations.pinned_share) && r.durations.pinned_share >= kPinnedMajority) return;
  if (r.errors.failed_with_errors >= kErringFailures * r.failed && !fl.low_load_failing.empty())
    return;
  std::vector<int64_t> busy;
  for (const auto& h : r.hours)
    if (known(h.utilization) && h.utilization >= kBusy) busy.push_back(h.hour);
  if (busy.empty()) return;
  Diagnosis f{"genuine_overload", "Genuine overload: failures follow load", 0.65, {}, ""};
  f.evidence.push_back("Failure share against load, by hour: correlation " + num(fl.correlation) +
                       ".");
  f.evidence.push_back("Busy hours (utilization at least " + pct(kBusy) +
                       "): " + hour_ranges(busy) + ".");
  f.fix =
      "Add capacity or shed load at the door, and bound retries with a budget so they do "
      "not add to the load when it is highest.";
  out.push_back(f);
}

void healthy(const Report& r, std::vector<Diagnosis>& out) {
  if (r.sessions <= 0) return;
  double fail_share = r.failed / r.sessions;
  if (fail_share > kHealthyFailShare || r.errors.lines > 0) return;
  Diagnosis f{"healthy", "No incident: the log looks healthy", 0.9, {}, ""};
  f.evidence.push_back(num(r.completed) + " of " + num(r.sessions) + " " + r.unit + " completed (" +
                       pct(1 - fail_share) + "); no error answers.");
  if (known(r.durations.median_ok_s))
    f.evidence.push_back("Median completed " + r.unit + ": " + span_label(r.durations.median_ok_s) +
                         "; at most " + num(r.peak) + " in flight.");
  f.fix = "Nothing to fix. Keep this log as the control for the next incident.";
  out.push_back(f);
}

}  // namespace

std::vector<Diagnosis> diagnose(const Report& r) {
  std::vector<Diagnosis> out;
  healthy(r, out);
  dead_dependency(r, out);
  ladder_longer_than_deadline(r, out);
  fake_saturation(r, out);
  batch_cuts_newest(r, out);
  genuine_overload(r, out);
  std::stable_sort(out.begin(), out.end(),
                   [](const Diagnosis& a, const Diagnosis& b) { return a.score > b.score; });
  return out;
}

}  // namespace retrystorm::incident
