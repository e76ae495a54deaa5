#include "engines/sessions/session_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <numbers>
#include <sstream>

#include "engines/event_queue.hpp"
#include "engines/sessions/clock.hpp"
#include "engines/sessions/timeline.hpp"
#include "model/keys.hpp"
#include "parallel/cancel.hpp"
#include "policies/backoff.hpp"
#include "policies/client_policy.hpp"
#include "random/rng.hpp"
#include "session_log/session_log.hpp"
#include "text/list.hpp"
#include "text/number.hpp"

namespace retrystorm::sessions {

void SessionBuckets::resize(double from_s, double to_s, double bucket) {
  origin_s = from_s;
  bucket_s = bucket;
  size_t n = static_cast<size_t>(std::max(0.0, std::ceil((to_s - from_s) / bucket - 1e-9)));
  t_s.resize(n);
  for (size_t i = 0; i < n; ++i) t_s[i] = from_s + static_cast<double>(i) * bucket;
  for (auto* v : {&occupancy[0], &occupancy[1], &occupancy[2], &launches, &completions, &failures,
                  &errors_429, &errors_401, &items_done, &arrivals, &queue_unread, &peak_in_flight})
    v->assign(n, 0);
}

long SessionBuckets::index(double t) const {
  double i = std::floor((t - origin_s) / bucket_s);
  return i >= 0 && i < static_cast<double>(size()) ? static_cast<long>(i) : -1;
}

void SessionBuckets::count(std::vector<double>& counts, double t, double amount) const {
  if (long i = index(t); i >= 0) counts[static_cast<size_t>(i)] += amount;
}

void SessionBuckets::occupy(Occupancy state, double from, double to) {
  auto& level = occupancy[static_cast<int>(state)];
  // Walks bucket by bucket, not by the bucket of each instant: with an origin
  // that is not exact in binary, the bucket of a bucket's own end can be that
  // same bucket, and a walk by instants would never move on.
  long first = index(from);
  if (first < 0) return;
  double t = from;
  for (size_t i = static_cast<size_t>(first); i < size() && t < to; ++i) {
    double bucket_end = origin_s + static_cast<double>(i + 1) * bucket_s;
    double until = std::min(to, bucket_end);
    if (until > t) level[i] += (until - t) / bucket_s;
    t = std::max(t, until);
  }
}

std::vector<double> ladder_s(const Scenario& s) {
  return ClientPolicy::of(s, Engine::sessions).mean_ladder(0);
}

namespace {

// Every random draw of the model goes through here, so that the
// deterministic mode ("every draw at its median") is one switch.
class Draws {
 public:
  Draws(uint64_t seed, bool deterministic) : rng_(seed), median_(deterministic) {}
  double uniform(double a, double b) {
    return median_ ? (a + b) / 2 : a + (b - a) * rng_.uniform();
  }
  double lognormal(double median, double sigma) {
    return median_ ? median : median * std::exp(sigma * rng_.normal());
  }
  double exponential(double mean) {
    return median_ ? mean * std::numbers::ln2 : rng_.exponential(mean);
  }
  bool chance(double p) { return median_ ? p > 0.5 : rng_.uniform() < p; }
  int pick(int n) {
    return median_ ? (n - 1) / 2 : std::min(n - 1, static_cast<int>(rng_.uniform() * n));
  }

 private:
  Rng rng_;
  bool median_;
};

// Ranges of the list keys: a ping a second at most, and a day at most a
// hundred times the rates (docs/limits.md).

std::vector<double> parse_numbers(const std::string& text, const std::string& key, double max) {
  std::vector<double> out;
  std::string bad;
  if (!parse_number_list(text, out, bad)) throw InputError(key + ": '" + bad + "' is not a number");
  for (double v : out)
    if (v < 0 || v > max)
      throw InputError(key + ": " + to_string(KeyValue{v}) +
                       " is out of range; allowed from 0 to " + to_string(KeyValue{max}));
  return out;
}

std::vector<double> ping_rates(const Scenario& s) {
  auto rates = parse_numbers(s.items.ping_rates_per_h, "items.ping_rates_per_h", kMaxPingsPerHour);
  if (rates.size() != 24)
    throw InputError("items.ping_rates_per_h: has " + std::to_string(rates.size()) +
                     " rates; give 24, one per hour of the day from 00");
  return rates;
}

std::vector<double> day_factors(const Scenario& s) {
  auto factors = parse_numbers(s.items.ping_day_factors, "items.ping_day_factors", kMaxDayFactor);
  if (factors.empty()) throw InputError("items.ping_day_factors: give at least one factor");
  return factors;
}

struct QueuedItem {
  ItemKind kind;
  double arrived_s;
};

// Items the initial queue may hold in all (as one entry may).
constexpr size_t kMaxInitialItems = 100000;

// "14 notification @2d06:30, anchor @2d18:00, 5 ping @2d21:00-2d21:48"
// The instants of "@WHEN[-WHEN]": the whole token is named when it is not one
// (a '-1' is no time before 0, not a range from nothing).
std::pair<double, double> queued_span(const std::string& token, const std::string& key) {
  const std::string when = token.substr(1);
  const size_t dash = when.find('-');
  double from = 0, to = 0;
  try {
    from = parse_clock(when.substr(0, dash), key);
    to = dash == std::string::npos ? from : parse_clock(when.substr(dash + 1), key);
  } catch (const InputError&) {
    throw InputError(key + ": '" + token +
                     "' is not @WHEN or @WHEN-WHEN, each a clock like 2d21:00 or seconds from 0");
  }
  if (to < from) throw InputError(key + ": '" + token + "' ends before it starts");
  return {from, to};
}

std::vector<QueuedItem> parse_initial_queue(const std::string& text, double start_s) {
  const std::string key = "items.initial_queue";
  std::vector<QueuedItem> out;
  for (std::string_view item : text::list_items(text)) {
    std::string entry(item);
    if (entry.find_first_not_of(" \t") == std::string::npos) continue;
    std::istringstream words(entry);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    int count = 1;
    size_t i = 0;
    if (w.size() == 3) {  // a count of digits only ('2.9' and '5abc' are none)
      const bool digits =
          w[0].size() <= 6 && w[0].find_first_not_of("0123456789") == std::string::npos;
      count = digits ? std::stoi(w[0]) : -1;
      i = 1;
    }
    if (w.size() < 2 || w.size() > 3 || count < 1 || count > 100000 || w[i + 1][0] != '@')
      throw InputError(key + ": '" + entry +
                       "' must be [COUNT] KIND @WHEN[-WHEN], like '5 ping @2d21:00-2d21:48'");
    ItemKind kind;
    if (w[i] == "ping" || w[i] == "pings") {
      kind = ItemKind::ping;
    } else if (w[i] == "notification" || w[i] == "notifications") {
      kind = ItemKind::notification;
    } else if (w[i] == "anchor" || w[i] == "anchors") {
      kind = ItemKind::anchor;
    } else {
      throw InputError(key + ": kind '" + w[i] +
                       "' is not allowed; choose ping, notification or anchor");
    }
    const auto [from, to] = queued_span(w[i + 1], key);
    // Queued before the first tick: they arrived by then.
    if (to > start_s)
      throw InputError(key + ": '" + w[i + 1] + "' is after sessions.start_s (" +
                       text::format_clock(start_s) +
                       "); the initial queue holds items that arrived by then");
    if (out.size() + static_cast<size_t>(count) > kMaxInitialItems)
      throw InputError(key + ": more than " + std::to_string(kMaxInitialItems) +
                       " items in all; the limit is " + std::to_string(kMaxInitialItems));
    for (int k = 0; k < count; ++k)
      out.push_back({kind, count == 1 ? from : from + (to - from) * k / (count - 1)});
  }
  std::stable_sort(out.begin(), out.end(), [](const QueuedItem& a, const QueuedItem& b) {
    return a.arrived_s < b.arrived_s;
  });
  return out;
}

enum class Round { scan, items, housekeeping, wrapup };

// What a session does when its next timer fires.
enum class Next { call, answered, round_done, item_work_done, woke, failed_fast, killed };

struct Item {
  ItemKind kind;
  double arrived_s;
  int channel;
  bool claimed = false;
};

struct Session {
  SessionRow row;
  bool alive = true;
  uint32_t generation = 0;  // bumps when a pending timer must be ignored
  Occupancy state = Occupancy::working;
  double state_since = 0;
  Round round = Round::scan;
  Next next = Next::call;
  int answer = 200;     // status of the call in progress
  int ladder_step = 0;  // sleeps taken since the last success
  int last_error = 0;
  double sleep_until = 0;    // while asleep
  std::vector<int> batch;    // items in work order
  size_t current = 0;        // batch[current] is being worked on
  double item_left_s = -1;   // work left on the current item; -1 = not started
  double budget_left_s = 0;  // work left in this item round
  double working_for_s = 0;  // the work span that the pending timer ends
};

// What fires when (engines/event_queue.hpp): timers at one instant fire in
// the order they were scheduled, so runs are reproducible.
struct Timer {
  enum Kind { tick, ping, notifications, anchor, start, session, crash, deadline } kind;
  int who;
  uint32_t generation;  // session timers: stale once the session's generation moved on
};

class Simulation {
 public:
  Simulation(const Scenario& s, const SessionOptions& options)
      : s_(s),
        log_(options.log),
        draw_(static_cast<uint64_t>(s.seed), s.sessions.deterministic),
        api_(s.api.timeline),
        rates_(ping_rates(s)),
        day_factors_(day_factors(s)),
        policy_(ClientPolicy::of(s, Engine::sessions)) {
    run_.scenario = s;
    double from = s.sessions.start_s, to = s.horizon_s;
    run_.series.resize(from, to, s.step_s);
    run_.hourly.resize(std::floor(from / kHour) * kHour, to, kHour);
  }

  SessionRun run() {
    for (const QueuedItem& q : parse_initial_queue(s_.items.initial_queue, s_.sessions.start_s)) {
      int channel = static_cast<int>(items_.size()) % s_.items.ping_channels;
      add_item(q.kind, q.arrived_s, q.kind == ItemKind::ping ? channel : -1, q.arrived_s);
    }
    schedule(s_.sessions.start_s, Timer::tick);
    schedule_next_ping(s_.sessions.start_s);
    schedule_daily(Timer::notifications, s_.items.notification_at_s,
                   s_.items.notifications_per_day > 0);
    schedule_daily(Timer::anchor, s_.items.anchor_at_s, s_.items.anchor_at_s >= 0);
    while (!timers_.empty() && timers_.top().key.t < s_.horizon_s) {
      EventQueue<Timer>::Event e = timers_.top();
      timers_.pop();
      ++run_.events;
      now_ = e.key.t;
      poll_();
      dispatch(e.what);
    }
    finish();
    return std::move(run_);
  }

 private:
  // ---- the clock ----
  void schedule(double t, Timer::Kind kind, int who = -1, uint32_t generation = 0) {
    timers_.push(t, 0, {kind, who, generation});
  }
  void dispatch(const Timer& t) {
    switch (t.kind) {
      case Timer::tick:
        return on_tick();
      case Timer::ping:
        return on_ping(t.who == 1);
      case Timer::notifications:
        return on_notifications();
      case Timer::anchor:
        return on_anchor();
      case Timer::start:
        return start_session(t.who);
      case Timer::session:
        if (live(t)) step(sessions_[static_cast<size_t>(t.who)]);
        return;
      case Timer::crash:
        if (live(t)) end(sessions_[static_cast<size_t>(t.who)], Outcome::crashed);
        return;
      case Timer::deadline:
        if (live(t)) on_deadline(sessions_[static_cast<size_t>(t.who)]);
        return;
    }
  }
  bool live(const Timer& t) const {
    const Session& x = sessions_[static_cast<size_t>(t.who)];
    return x.alive && (t.kind != Timer::session || x.generation == t.generation);
  }
  void emit(SessionEvent e) { emit_at(e, now_); }
  void emit_at(SessionEvent e, double t_s) {
    if (!log_) return;
    e.t_s = t_s;
    if (e.session >= 0)
      e.session_id = sessions_[static_cast<size_t>(e.session)].row.session_id.c_str();
    log_->event(e);
  }

  // ---- items ----
  double ping_rate_per_s(double t) const {
    long day = static_cast<long>(std::floor(t / kDay));
    size_t d = std::min(static_cast<size_t>(std::max(0L, day)), day_factors_.size() - 1);
    int hour = static_cast<int>(std::fmod(t, kDay) / kHour);
    return rates_[static_cast<size_t>(hour)] * day_factors_[d] / kHour;
  }
  // Poisson with a rate that is constant within each hour: draw the next
  // gap at this hour's rate; past the hour's end, draw again from there.
  void schedule_next_ping(double from) {
    double hour_end = (std::floor(from / kHour) + 1) * kHour;
    double rate = ping_rate_per_s(from);
    double at = rate > 0 ? from + draw_.exponential(1 / rate) : hour_end;
    if (at < hour_end) return schedule(at, Timer::ping, 1);
    schedule(hour_end, Timer::ping, 0);
  }
  // The first daily occurrence at or after the start; each one schedules the next.
  void schedule_daily(Timer::Kind kind, double time_of_day, bool wanted) {
    if (!wanted) return;
    double start = s_.sessions.start_s;
    double at = std::floor(start / kDay) * kDay + time_of_day;
    schedule(at < start ? at + kDay : at, kind);
  }
  void on_ping(bool arrives) {
    if (arrives) {
      int channel = draw_.pick(s_.items.ping_channels);
      supersede(ItemKind::ping, channel);
      add_item(ItemKind::ping, now_, channel, now_);
    }
    schedule_next_ping(now_);
  }
  void on_notifications() {
    for (int i = 0; i < s_.items.notifications_per_day; ++i)
      add_item(ItemKind::notification, now_, -1, now_);
    schedule(now_ + kDay, Timer::notifications);
  }
  // Tomorrow's schedule replaces yesterday's, if still unread and
  // unclaimed: the day it was for has begun (the 22:15 session of the
  // post-mortem opened one anchor, the next day's).
  void on_anchor() {
    supersede(ItemKind::anchor, -1);
    add_item(ItemKind::anchor, now_, -1, now_);
    schedule(now_ + kDay, Timer::anchor);
  }
  // A new ping replaces an unread, unclaimed one on the same channel; a new
  // anchor (channel -1) an older anchor.
  void supersede(ItemKind kind, int channel) {
    // The channel's own unread items, in the queue's order: the first
    // unclaimed one (a scan of the whole queue for every ping took seconds).
    auto by = unread_by_channel_.find({static_cast<int>(kind), channel});
    if (by == unread_by_channel_.end()) return;
    for (int id : by->second) {
      Item& item = items_[static_cast<size_t>(id)];
      if (item.claimed) continue;
      emit({.kind = SessionEvent::superseded, .item = id, .item_kind = item.kind});
      forget_unread(id);
      unread_.erase(std::find(unread_.begin(), unread_.end(), id));
      unread_changed();
      ++run_.items.superseded;
      return;
    }
  }
  // Every arrival posts a fresh wake-up.
  void add_item(ItemKind kind, double arrived_s, int channel, double at) {
    int id = static_cast<int>(items_.size());
    items_.push_back({kind, arrived_s, channel});
    enqueue(id);
    ++run_.items.arrived;
    run_.series.count(run_.series.arrivals, at);
    run_.hourly.count(run_.hourly.arrivals, at);
    // At its arrival, as the series count it (an item of the initial queue
    // arrived before the run starts).
    emit_at({.kind = SessionEvent::arrival, .item = id, .item_kind = kind}, at);
    wake_ups_.push_back(0);
  }
  // The unread queue is FIFO by arrival, also for items a session gives back.
  void enqueue(int id) {
    items_[static_cast<size_t>(id)].claimed = false;
    double arrived = items_[static_cast<size_t>(id)].arrived_s;
    auto by_arrival = [&](double a, int other) {
      return a < items_[static_cast<size_t>(other)].arrived_s;
    };
    auto at = std::upper_bound(unread_.begin(), unread_.end(), arrived, by_arrival);
    unread_.insert(at, id);
    // The same place among its channel's: the queue's order, restricted.
    std::vector<int>& mine = unread_by_channel_[channel_of(id)];
    mine.insert(std::upper_bound(mine.begin(), mine.end(), arrived, by_arrival), id);
    unread_changed();
  }
  // An item leaves the unread queue (done, replaced, or dropped).
  void forget_unread(int id) {
    std::vector<int>& mine = unread_by_channel_.find(channel_of(id))->second;
    mine.erase(std::find(mine.begin(), mine.end(), id));
  }
  std::pair<int, int> channel_of(int id) const {
    const Item& item = items_[static_cast<size_t>(id)];
    return {static_cast<int>(item.kind), item.channel};
  }
  // An item a session gives back is unread again; a ping given back when a
  // newer ping on its channel is in the queue is replaced by it, as an
  // arrival replaces an unread, unclaimed ping: a channel's news is its
  // newest ping. Without this, every session the deadline kills hands back
  // pings that newer ones already cover, and the queue grows by the
  // channel's whole history through an outage. An anchor given back when
  // a newer anchor is queued goes the same way (on_anchor).
  void give_back(int id) {
    Item& item = items_[static_cast<size_t>(id)];
    item.claimed = false;
    if (item.kind == ItemKind::notification) return;
    // A newer unread item of its kind on its channel: the latest arrival
    // there, kept per channel (a scan of the queue for every item given back
    // took minutes with 100,000 unread).
    const std::vector<int>& mine = unread_by_channel_[channel_of(id)];
    bool newer =
        !mine.empty() && items_[static_cast<size_t>(mine.back())].arrived_s > item.arrived_s;
    if (!newer) return;
    emit({.kind = SessionEvent::superseded, .item = id, .item_kind = item.kind});
    forget_unread(id);
    unread_.erase(std::find(unread_.begin(), unread_.end(), id));
    unread_changed();
    ++run_.items.superseded;
  }
  bool any_unclaimed() const {
    return std::any_of(unread_.begin(), unread_.end(),
                       [&](int id) { return !items_[static_cast<size_t>(id)].claimed; });
  }
  double item_work_s(const Item& item) {
    switch (item.kind) {
      case ItemKind::ping:
        return draw_.lognormal(s_.items.ping_work_median_s, s_.items.ping_work_sigma);
      case ItemKind::notification:
        if (now_ - item.arrived_s > s_.items.notification_stale_after_s)
          return draw_.uniform(s_.items.notification_stale_min_s,
                               s_.items.notification_stale_max_s);
        return draw_.uniform(s_.items.notification_fresh_min_s, s_.items.notification_fresh_max_s);
      case ItemKind::anchor:
        return draw_.lognormal(s_.items.anchor_work_median_s, s_.items.anchor_work_sigma);
    }
    return 0;
  }

  // ---- the scheduler ----
  // One launch per tick at most, when a wake-up is pending and an item is
  // unread and unclaimed; it consumes every pending wake-up, and the new
  // chain keeps the smallest delivery count among them.
  void on_tick() {
    if (!wake_ups_.empty() && any_unclaimed()) {
      int delivery = *std::min_element(wake_ups_.begin(), wake_ups_.end()) + 1;
      wake_ups_.clear();
      double delay = draw_.uniform(s_.sessions.launch_delay_min_s, s_.sessions.launch_delay_max_s);
      schedule(now_ + delay, Timer::start, delivery);
    }
    schedule(now_ + s_.sessions.poll_s, Timer::tick);
  }

  // ---- a session ----
  void start_session(int delivery) {
    int id = static_cast<int>(sessions_.size());
    sessions_.emplace_back();
    Session& x = sessions_.back();
    SessionRow& r = x.row;
    r.id = id;
    r.session_id = fmt::format("s-{:04d}-{}", id, format_clock(now_));
    r.start_s = now_;
    r.delivery = delivery;
    r.queue_unread_at_open = static_cast<int>(unread_.size());
    for (int item : unread_) {
      if (static_cast<int>(x.batch.size()) >= s_.sessions.batch_cap) break;
      if (items_[static_cast<size_t>(item)].claimed) continue;
      items_[static_cast<size_t>(item)].claimed = true;
      x.batch.push_back(item);
      r.anchor_in_batch |= items_[static_cast<size_t>(item)].kind == ItemKind::anchor;
    }
    r.items_in = static_cast<int>(x.batch.size());
    x.state_since = now_;
    change_in_flight(+1);
    run_.series.count(run_.series.launches, now_);
    run_.hourly.count(run_.hourly.launches, now_);
    emit({.kind = SessionEvent::launch, .session = id});
    if (s_.client.deadline_s > 0) schedule(now_ + s_.client.deadline_s, Timer::deadline, id);
    if (draw_.chance(s_.sessions.crash_probability))
      schedule(now_ + draw_.uniform(0, s_.sessions.crash_within_s), Timer::crash, id);
    x.round = Round::scan;
    after(x, draw_.uniform(s_.sessions.boot_min_s, s_.sessions.boot_max_s), Next::call);
  }

  void after(Session& x, double seconds, Next next) {
    x.next = next;
    schedule(now_ + seconds, Timer::session, x.row.id, x.generation);
  }

  void set_state(Session& x, Occupancy state) {
    close_state(x);
    x.state = state;
  }
  void close_state(Session& x) {
    x.row.time_s[static_cast<int>(x.state)] += now_ - x.state_since;
    run_.series.occupy(x.state, x.state_since, now_);
    run_.hourly.occupy(x.state, x.state_since, now_);
    x.state_since = now_;
  }

  void step(Session& x) {
    switch (x.next) {
      case Next::call:
        return call(x);
      case Next::answered:
        return answered(x);
      case Next::round_done:
        return round_done(x);
      case Next::item_work_done:
        return item_work_done(x);
      case Next::woke:
        emit({.kind = SessionEvent::wake, .session = x.row.id});
        set_state(x, Occupancy::working);
        return call(x);
      case Next::failed_fast:
        return end(x, Outcome::failed_fast);
      case Next::killed:
        return end(x, Outcome::killed_asleep);
    }
  }

  // Every round opens with one API call; the answer depends on the API's
  // state when the call is made.
  void call(Session& x) {
    ++x.row.n_api_calls;
    emit({.kind = SessionEvent::call, .session = x.row.id});
    const ApiPhase& api = api_.at(now_);
    bool refused = api.state == ApiState::dead || api.state == ApiState::auth_fail ||
                   (api.state == ApiState::rate_limited && draw_.chance(api.p));
    if (!refused) {
      x.answer = 200;
      return after(x, draw_.uniform(s_.api.success_min_s, s_.api.success_max_s), Next::answered);
    }
    set_state(x, Occupancy::blocked);
    if (api.state == ApiState::auth_fail) {
      x.answer = 401;
      return after(x, draw_.uniform(s_.api.auth_min_s, s_.api.auth_max_s), Next::answered);
    }
    x.answer = 429;
    after(x, draw_.uniform(s_.api.error_min_s, s_.api.error_max_s), Next::answered);
  }

  void answered(Session& x) {
    if (x.answer == 200) {
      emit({.kind = SessionEvent::resp, .session = x.row.id, .status = 200});
      x.ladder_step = 0;  // a success resets the ladder
      return begin_round(x);
    }
    error_answer(x);
  }

  // An error: sleep the next step of the ladder and call again, unless the
  // ladder is used up, or (fix one) the rest of it cannot fit before the
  // deadline.
  void error_answer(Session& x) {
    int status = x.answer;
    (status == 429 ? x.row.n_429 : x.row.n_401)++;
    x.last_error = status;
    auto& counts = status == 429 ? run_.series.errors_429 : run_.series.errors_401;
    auto& hourly = status == 429 ? run_.hourly.errors_429 : run_.hourly.errors_401;
    run_.series.count(counts, now_);
    run_.hourly.count(hourly, now_);
    int step = x.ladder_step + 1;
    emit({.t_s = 0,
          .kind = SessionEvent::resp,
          .session = x.row.id,
          .status = status,
          .step = step});
    // The policy's decision: the ladder used up, or (fix one, deadline_aware)
    // the rest of it cannot fit before the deadline, or a sleep.
    RetryDecision d =
        policy_.decide({.layer = 0, .attempt = step, .now_s = now_, .start_s = x.row.start_s},
                       [&](double low, double high) { return draw_.uniform(low, high); });
    if (d.verdict == RetryVerdict::exhausted) {
      set_state(x, Occupancy::working);
      return end(x, Outcome::ladder_exhausted);
    }
    if (d.verdict == RetryVerdict::past_deadline) {
      set_state(x, Occupancy::working);
      return after(x, s_.sessions.fail_fast_s, Next::failed_fast);
    }
    double sleep = d.delay_s;
    set_state(x, Occupancy::asleep);
    emit({.kind = SessionEvent::sleep, .session = x.row.id, .duration_s = sleep});
    x.ladder_step = step;
    x.sleep_until = now_ + sleep;
    after(x, sleep, Next::woke);
  }

  void begin_round(Session& x) {
    set_state(x, Occupancy::working);
    switch (x.round) {
      case Round::scan:
        return after(x, draw_.uniform(s_.sessions.scan_min_s, s_.sessions.scan_max_s),
                     Next::round_done);
      case Round::items:
        x.budget_left_s = draw_.uniform(s_.sessions.round_min_s, s_.sessions.round_max_s);
        return work_on_items(x);
      case Round::housekeeping:
        return after(
            x, draw_.lognormal(s_.sessions.housekeeping_median_s, s_.sessions.housekeeping_sigma),
            Next::round_done);
      case Round::wrapup:
        return after(x, draw_.uniform(s_.sessions.wrapup_min_s, s_.sessions.wrapup_max_s),
                     Next::round_done);
    }
  }

  void round_done(Session& x) {
    switch (x.round) {
      case Round::scan:
        apply_anchor_rule(x);
        x.round = x.batch.empty() ? Round::housekeeping : Round::items;
        return call(x);
      case Round::items:  // (item rounds end in item_work_done)
      case Round::housekeeping:
        x.round = Round::wrapup;
        return call(x);
      case Round::wrapup:
        return end(x, Outcome::completed);
    }
  }

  // Fix two: a session opening with a full batch does the anchors first,
  // then a few others, and leaves the rest unread for the next tick.
  void apply_anchor_rule(Session& x) {
    if (!s_.sessions.anchor_first || x.row.items_in < s_.sessions.anchor_threshold) return;
    std::vector<int> keep, others;
    for (int item : x.batch)
      (items_[static_cast<size_t>(item)].kind == ItemKind::anchor ? keep : others).push_back(item);
    size_t others_kept = std::min(others.size(), static_cast<size_t>(s_.sessions.anchor_others));
    keep.insert(keep.end(), others.begin(), others.begin() + static_cast<long>(others_kept));
    for (size_t i = others_kept; i < others.size(); ++i) {
      items_[static_cast<size_t>(others[i])].claimed = false;
      emit({.t_s = 0,
            .kind = SessionEvent::defer,
            .session = x.row.id,
            .item = others[i],
            .item_kind = items_[static_cast<size_t>(others[i])].kind});
      ++x.row.items_deferred;
    }
    x.batch = std::move(keep);
    if (x.row.items_deferred > 0) wake_ups_.push_back(0);
  }

  // Items take the round's work budget in batch order: several small items
  // can finish in one round, a big one spans rounds.
  void work_on_items(Session& x) {
    if (x.current >= x.batch.size()) {
      x.round = Round::housekeeping;
      return call(x);
    }
    if (x.budget_left_s <= 0) return call(x);  // the next item round
    int id = x.batch[x.current];
    const Item& item = items_[static_cast<size_t>(id)];
    if (x.item_left_s < 0) {
      x.item_left_s = item_work_s(item);
      if (item.kind == ItemKind::anchor && x.row.anchor_started_after_s < 0)
        x.row.anchor_started_after_s = now_ - x.row.start_s;
      emit({.t_s = 0,
            .kind = SessionEvent::item_start,
            .session = x.row.id,
            .item = id,
            .item_kind = item.kind});
    }
    x.working_for_s = std::min(x.item_left_s, x.budget_left_s);
    after(x, x.working_for_s, Next::item_work_done);
  }

  void item_work_done(Session& x) {
    x.item_left_s -= x.working_for_s;
    x.budget_left_s -= x.working_for_s;
    if (x.item_left_s <= 1e-9) commit(x);
    work_on_items(x);
  }

  // An item is committed the moment its work finishes.
  void commit(Session& x) {
    int id = x.batch[x.current];
    const Item& item = items_[static_cast<size_t>(id)];
    forget_unread(id);
    unread_.erase(std::find(unread_.begin(), unread_.end(), id));
    unread_changed();
    ++run_.items.done;
    ++x.row.items_done;
    x.row.anchor_done |= item.kind == ItemKind::anchor;
    run_.series.count(run_.series.items_done, now_);
    run_.hourly.count(run_.hourly.items_done, now_);
    emit({.t_s = 0,
          .kind = SessionEvent::item_done,
          .session = x.row.id,
          .item = id,
          .item_kind = item.kind});
    ++x.current;
    x.item_left_s = -1;
  }

  // The deadline: a working (or blocked) session dies at once; a sleeping
  // one when the watchdog next looks, or when it wakes, whichever is first.
  void on_deadline(Session& x) {
    if (x.state != Occupancy::asleep) return end(x, Outcome::killed_working);
    double look = std::ceil(now_ / s_.sessions.watchdog_s) * s_.sessions.watchdog_s;
    ++x.generation;
    after(x, std::min(look, x.sleep_until) - now_, Next::killed);
  }

  void end(Session& x, Outcome outcome) {
    close_state(x);
    x.alive = false;
    ++x.generation;
    SessionRow& r = x.row;
    r.end_s = now_;
    r.outcome = outcome;
    if (outcome == Outcome::killed_asleep || outcome == Outcome::failed_fast ||
        outcome == Outcome::ladder_exhausted)
      r.terminal_error = x.last_error;
    // Claimed items not yet committed go back unread; committed ones stay done.
    for (size_t i = x.current; i < x.batch.size(); ++i) give_back(x.batch[i]);
    change_in_flight(-1);
    auto& series = outcome == Outcome::completed ? run_.series.completions : run_.series.failures;
    auto& hourly = outcome == Outcome::completed ? run_.hourly.completions : run_.hourly.failures;
    run_.series.count(series, now_);
    run_.hourly.count(hourly, now_);
    emit({.kind = SessionEvent::end, .session = r.id, .outcome = outcome});
    // At-least-once: a failed session's items are delivered again, up to
    // the chain's cap, or retries never die.
    if (failed(outcome) && x.current < x.batch.size() && r.delivery < s_.sessions.max_deliveries)
      wake_ups_.push_back(r.delivery);
  }

  // ---- measurements ----
  void change_in_flight(int delta) {
    in_flight_ += delta;
    run_.peak_in_flight = std::max(run_.peak_in_flight, in_flight_);
    level_changes_.push_back({now_, in_flight_});
  }
  // Walks a level's changes bucket by bucket: each bucket's peak (the level
  // it opens with and every level it reaches) and its level at the end.
  struct BucketLevels {
    std::vector<double> peak, end;
  };
  static BucketLevels levels(const SessionBuckets& b,
                             const std::vector<std::pair<double, int>>& changes) {
    BucketLevels out{std::vector<double>(b.size()), std::vector<double>(b.size())};
    int level = 0;
    size_t c = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      double end = b.origin_s + static_cast<double>(i + 1) * b.bucket_s;
      double peak = level;
      for (; c < changes.size() && changes[c].first < end; ++c) {
        level = changes[c].second;
        peak = std::max(peak, static_cast<double>(level));
      }
      out.peak[i] = peak;
      out.end[i] = level;
    }
    return out;
  }
  void unread_changed() { unread_changes_.push_back({now_, static_cast<int>(unread_.size())}); }

  void finish() {
    now_ = s_.horizon_s;
    for (Session& x : sessions_) {
      if (!x.alive) continue;
      close_state(x);
      x.row.end_s = now_;
      x.row.outcome = Outcome::in_flight;
    }
    run_.items.unread = static_cast<int>(unread_.size());
    for (SessionBuckets* b : {&run_.series, &run_.hourly}) {
      b->peak_in_flight = levels(*b, level_changes_).peak;
      b->queue_unread = levels(*b, unread_changes_).end;
    }
    run_.sessions.reserve(sessions_.size());
    for (Session& x : sessions_) run_.sessions.push_back(std::move(x.row));
  }

  const Scenario& s_;
  SessionSink* log_;
  Draws draw_;
  ApiTimeline api_;
  std::vector<double> rates_, day_factors_;
  ClientPolicy policy_;
  SessionRun run_;
  EventQueue<Timer> timers_;
  CancelPoll poll_;  // the server's deadline (parallel/cancel.hpp)
  double now_ = 0;
  std::vector<Item> items_;
  std::vector<int> unread_;  // item ids, FIFO by arrival
  // The unread items by (kind, channel), each in the queue's order
  // (enqueue, forget_unread).
  std::map<std::pair<int, int>, std::vector<int>> unread_by_channel_;
  std::vector<int> wake_ups_;  // pending wake-ups: their chains' delivery counts
  std::deque<Session> sessions_;
  int in_flight_ = 0;
  std::vector<std::pair<double, int>> level_changes_;   // sessions in flight
  std::vector<std::pair<double, int>> unread_changes_;  // unread queue length
};

}  // namespace

SessionRun run_sessions(const Scenario& s, const SessionOptions& options) {
  return Simulation(s, options).run();
}

namespace {

// Each sleep of the ladder is logged whole (events.jsonl's `dur`): none that
// a session can reach may pass what a log holds, or the run would write a log
// `analyze` refuses. A step is reached while the shortest sleeps before it
// end before the deadline (client.deadline_s; every step without one).
void check_ladder_sleeps(const Scenario& s) {
  const double deadline = s.client.deadline_s > 0 ? s.client.deadline_s : INFINITY;
  double before = 0;  // the shortest sleeps of the steps before step k
  for (int k = 1; k <= s.client.retries && before < deadline; ++k) {
    const DelayRange sleep = backoff_delay(s.client.backoff, k);
    before += sleep.low_s;
    if (const double longest = sleep.high_s; longest > session_log::kMaxDurationS)
      throw InputError(fmt::format(
          "client.backoff: retry {} of the ladder sleeps up to {} s; the session model sleeps "
          "at most {} s (what its logs hold): a smaller base_s, multiplier or cap_s, or fewer "
          "client.retries",
          k, number_text(longest), number_text(session_log::kMaxDurationS)));
  }
}

}  // namespace

void validate_sessions(const Scenario& s, const RunLimits&) {
  ApiTimeline check(s.api.timeline);
  check_ladder_sleeps(s);
  ping_rates(s);
  day_factors(s);
  parse_initial_queue(s.items.initial_queue, s.sessions.start_s);
  auto ordered = [](const char* low_key, double low, const char* high_key, double high) {
    if (low > high)
      throw InputError(std::string(low_key) + ": " + number_text(low) + " is above " + high_key +
                       " (" + number_text(high) + "); the range must not be empty");
  };
  const auto& x = s.sessions;
  ordered("sessions.launch_delay_min_s", x.launch_delay_min_s, "sessions.launch_delay_max_s",
          x.launch_delay_max_s);
  ordered("sessions.boot_min_s", x.boot_min_s, "sessions.boot_max_s", x.boot_max_s);
  ordered("sessions.scan_min_s", x.scan_min_s, "sessions.scan_max_s", x.scan_max_s);
  ordered("sessions.round_min_s", x.round_min_s, "sessions.round_max_s", x.round_max_s);
  ordered("sessions.wrapup_min_s", x.wrapup_min_s, "sessions.wrapup_max_s", x.wrapup_max_s);
  ordered("api.success_min_s", s.api.success_min_s, "api.success_max_s", s.api.success_max_s);
  ordered("api.error_min_s", s.api.error_min_s, "api.error_max_s", s.api.error_max_s);
  ordered("api.auth_min_s", s.api.auth_min_s, "api.auth_max_s", s.api.auth_max_s);
  ordered("items.notification_fresh_min_s", s.items.notification_fresh_min_s,
          "items.notification_fresh_max_s", s.items.notification_fresh_max_s);
  ordered("items.notification_stale_min_s", s.items.notification_stale_min_s,
          "items.notification_stale_max_s", s.items.notification_stale_max_s);
  if (x.launch_delay_max_s >= x.poll_s)
    throw InputError("sessions.launch_delay_max_s: " + number_text(x.launch_delay_max_s) +
                     " must be below sessions.poll_s (" + number_text(x.poll_s) + ")");
  if (x.start_s >= s.horizon_s)
    throw InputError("sessions.start_s: " + number_text(x.start_s) +
                     " must be before the end of the run (horizon_s " + number_text(s.horizon_s) +
                     ")");
  if (x.focus_to_s < x.focus_from_s)
    throw InputError("sessions.focus_to_s: " + number_text(x.focus_to_s) +
                     " must not be before sessions.focus_from_s (" + number_text(x.focus_from_s) +
                     ")");
  // The headline's figures are rates over the window: one that opens before
  // the first tick or ends past the run would spread what was simulated over
  // time that was not (0 and 0 is the whole run).
  const bool focus_set = x.focus_from_s != 0 || x.focus_to_s != 0;
  if (focus_set && x.focus_from_s < x.start_s)
    throw InputError("sessions.focus_from_s: " + number_text(x.focus_from_s) +
                     " must be at or after sessions.start_s (" + number_text(x.start_s) +
                     "), where the run starts; nothing before it is simulated");
  if (x.focus_to_s > s.horizon_s)
    throw InputError("sessions.focus_to_s: " + number_text(x.focus_to_s) +
                     " must not be past the end of the run (horizon_s " + number_text(s.horizon_s) +
                     ")");
  if (s.client.retries > 100)
    throw InputError("client.retries: " + std::to_string(s.client.retries) +
                     " ladder steps; the session model allows up to 100");
}

}  // namespace retrystorm::sessions
