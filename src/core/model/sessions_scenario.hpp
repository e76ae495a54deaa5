// The session model's part of the scenario (engine: sessions): the scheduler,
// the sessions it launches, the API they call and the items they work on.
// Design and calibrated defaults: docs/sessions.md.
// The retry ladder and the session deadline are the client's keys
// (client.retries, client.backoff.*, client.deadline_s), so lint and advice
// read them as for any other scenario.
#pragma once

#include <string>

namespace retrystorm {

struct SessionsModel {
  double poll_s = 300;     // scheduler tick
  double watchdog_s = 30;  // how often the watchdog looks at sleeping sessions
  int batch_cap = 20;      // items claimed at most per session
  int max_deliveries = 2;  // launches per wake-up chain, first one included
  double launch_delay_min_s = 2;
  double launch_delay_max_s = 15;
  double boot_min_s = 5;
  double boot_max_s = 25;
  double scan_min_s = 40;  // the scan round's work
  double scan_max_s = 60;
  double round_min_s = 100;  // work budget of one item round
  double round_max_s = 140;
  // Lognormal, median 7 min: calibrated with the pings' cost so that the
  // normal day's median successful session is the post-mortem's 11.4 min
  // while its busiest hour stays near rho 0.26 (docs/scheduler-calibration.md).
  double housekeeping_median_s = 420;
  double housekeeping_sigma = 0.4;
  double wrapup_min_s = 45;
  double wrapup_max_s = 75;
  double crash_probability = 0.08;  // an unrelated crash early in a session
  double crash_within_s = 900;      // ... at U(0, crash_within_s) after start
  bool deadline_aware = false;      // fix one: fail fast when the ladder cannot fit
  double fail_fast_s = 5;
  bool anchor_first = false;  // fix two: anchors first in a full batch
  int anchor_threshold = 16;
  int anchor_others = 5;
  bool deterministic = false;  // every random draw at its median
  double start_s = 0;          // first scheduler tick; nothing before it is simulated
  double focus_from_s = 0;     // the window the headline figures cover; 0, 0 = the run
  double focus_to_s = 0;
};

struct ApiModel {
  // "WHEN STATE, ...": WHEN is seconds or [Nd]HH:MM[:SS]; STATE is healthy,
  // dead, 429:P (rate limited) or 401 (credentials refused). Healthy before
  // the first entry.
  std::string timeline;
  double success_min_s = 1;
  double success_max_s = 4;
  double error_min_s = 0.3;  // a 429 answer
  double error_max_s = 1.5;
  double auth_min_s = 150;  // a 401 answer (slow)
  double auth_max_s = 200;
};

// Ranges of the items.* lists: the engine refuses values beyond them and a
// replay scenario written by `analyze` is clamped to them.
constexpr double kMaxPingsPerHour = 3600, kMaxDayFactor = 100;

struct ItemsModel {
  // Pings per hour of day, 00 to 23.
  std::string ping_rates_per_h =
      "0.84,0.84,0.84,0.84,0.84,1.26,2.31,3.675,5.25,6.825,7.35,7.35,7.875,12.6,13.125,12.6,"
      "8.4,6.825,5.25,3.99,3.15,2.52,1.89,1.26";
  std::string ping_day_factors = "1";  // multiplier per day; the last repeats
  int ping_channels = 5;
  double ping_work_median_s = 55;  // lognormal: items are cheap (see housekeeping_median_s)
  double ping_work_sigma = 0.9;
  int notifications_per_day = 14;
  double notification_at_s = 23400;  // 06:30
  double notification_fresh_min_s = 10;
  double notification_fresh_max_s = 20;
  double notification_stale_after_s = 10800;
  double notification_stale_min_s = 88;
  double notification_stale_max_s = 112;
  double anchor_at_s = 64800;  // 18:00; negative: no anchor
  double anchor_work_median_s = 600;
  double anchor_work_sigma = 0.1;
  // Items already queued at sessions.start_s: "14 notification @2d06:30,
  // anchor @2d18:00, 5 ping @2d21:00-2d21:48" (a range spreads them evenly).
  std::string initial_queue;
};

}  // namespace retrystorm
