// Incident logs written for the analyzer's tests and benchmark: sessions of
// the scheduler model (docs/sessions.md) in miniature,
// with the events each session would log. Every figure is known by
// construction, so tests can compare the analysis with the truth.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace retrystorm::testlogs {

inline constexpr double kBoot = 10;        // seconds before the first call
inline constexpr double kCall = 1;         // every call takes a second
inline constexpr double kRound = 119;      // work after each good call
inline constexpr int kRounds = 5;          // a healthy session: 10 + 5 x 120 s
inline constexpr double kDeadline = 1800;  // killed then, asleep ones at the next watchdog look
inline const std::vector<double> kLadder = {30, 60, 120, 240, 480, 960};

struct Session {
  std::string id;
  double start = 0, end = 0;
  std::string outcome = "completed";
  int n429 = 0;
  bool terminal429 = false;
  int calls = 0;
  int items_in = 3, items_done = 3;
  double working = 0, blocked = 0, asleep = 0;
  int anchor_in = 0, anchor_done = 0;
  std::vector<std::string> events;
};

inline std::string fmt(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

inline void event(Session& s, double t, const std::string& ev, const std::string& extra = "") {
  s.events.push_back("{\"t\": " + fmt(t) + ", \"sid\": \"" + s.id + "\", \"ev\": \"" + ev + "\"" +
                     extra + "}");
}

// A session whose calls all succeed: boot, then rounds each opening with a call.
inline Session healthy(const std::string& id, double start) {
  Session s;
  s.id = id;
  s.start = start;
  event(s, start, "launch");
  double t = start + kBoot;
  s.working = kBoot;
  for (int r = 0; r < kRounds; ++r) {
    event(s, t, "call");
    event(s, t + kCall, "resp", ", \"status\": 200");
    t += kCall + kRound;
    s.working += kCall + kRound;
    ++s.calls;
  }
  s.end = t;
  event(s, t, "end", ", \"outcome\": \"completed\"");
  return s;
}

// A session whose every call answers 429: it walks the ladder and is killed
// asleep at the deadline, when the watchdog next looks (`watchdog` s later).
inline Session dead(const std::string& id, double start, double watchdog) {
  Session s;
  s.id = id;
  s.start = start;
  s.outcome = "killed_asleep";
  s.terminal429 = true;
  s.items_done = 0;
  event(s, start, "launch");
  double t = start + kBoot;
  s.working = kBoot;
  for (size_t step = 0; step < kLadder.size(); ++step) {
    event(s, t, "call");
    event(s, t + kCall, "resp", ", \"status\": 429, \"step\": " + std::to_string(step));
    t += kCall;
    s.blocked += kCall;
    ++s.calls;
    ++s.n429;
    double wake = t + kLadder[step];
    double kill = start + kDeadline + watchdog;
    event(s, t, "sleep",
          ", \"dur\": " + fmt(kLadder[step]) + ", \"step\": " + std::to_string(step));
    if (wake >= kill) {
      s.asleep += kill - t;
      t = kill;
      break;
    }
    event(s, wake, "wake");
    s.asleep += kLadder[step];
    t = wake;
  }
  s.end = t;
  event(s, t, "end", ", \"outcome\": \"killed_asleep\"");
  return s;
}

// A healthy session that opened with a full batch and the anchor last: killed
// working at the deadline.
inline Session cut_batch(const std::string& id, double start) {
  Session s = healthy(id, start);
  s.events.pop_back();
  s.outcome = "killed_working";
  s.items_in = 20;
  s.items_done = 14;
  s.anchor_in = 1;
  s.end = start + kDeadline;
  s.working = kDeadline;  // it never met an error
  event(s, s.end, "end", ", \"outcome\": \"killed_working\"");
  return s;
}

inline const char* kHeader =
    "session_id,start_s,end_s,outcome,n_429,n_401,terminal_error_line,n_api_calls,items_in,"
    "items_done,queue_unread_at_open,time_working_s,time_blocked_s,time_asleep_s,"
    "anchor_in_batch,anchor_done\n";
inline const char* kBareHeader = "session_id,start_s,end_s,outcome,n_429,terminal_error_line\n";

// One sessions.csv row; `bare` leaves out every column analyze does not need.
inline std::string row(const Session& s, bool bare) {
  std::string r = s.id + "," + fmt(s.start) + "," + fmt(s.end) + "," + s.outcome + "," +
                  std::to_string(s.n429) + ",";
  if (bare) return r + (s.terminal429 ? "429" : "") + "\n";
  return r + "0," + (s.terminal429 ? "429" : "") + "," + std::to_string(s.calls) + "," +
         std::to_string(s.items_in) + "," + std::to_string(s.items_done) + "," +
         std::to_string(s.items_in) + "," + fmt(s.working) + "," + fmt(s.blocked) + "," +
         fmt(s.asleep) + "," + std::to_string(s.anchor_in) + "," + std::to_string(s.anchor_done) +
         "\n";
}

// Writes DIR/sessions.csv (and DIR/events.jsonl) for `sessions`.
inline void write_logs(const std::filesystem::path& dir, const std::vector<Session>& sessions,
                       bool bare = false) {
  std::filesystem::create_directories(dir);
  std::ofstream csv(dir / "sessions.csv"), ev(dir / "events.jsonl");
  csv << (bare ? kBareHeader : kHeader);
  for (const auto& s : sessions) {
    csv << row(s, bare);
    for (const auto& e : s.events) ev << e << "\n";
  }
}

// A small outage: healthy at 00:00, the API dead from 01:00 to 06:00 (one
// session an hour at 01:00 and 02:00, one every five minutes at 03:00 and
// 04:00, two at 05:00), healthy again from 06:00, and at 07:15 a full batch
// killed working before its anchor.
inline std::vector<Session> outage() {
  std::vector<Session> out;
  int n = 0;
  auto id = [&] { return "s-" + std::to_string(n++); };
  for (double m : {5.0, 25.0, 45.0}) out.push_back(healthy(id(), m * 60));
  for (double h : {1.0, 2.0}) out.push_back(dead(id(), h * 3600 + 600, 12));
  for (int k = 0; k < 24; ++k) out.push_back(dead(id(), 3 * 3600 + k * 300 + 5, (k % 4) * 7.0));
  for (double m : {10.0, 40.0}) out.push_back(dead(id(), 5 * 3600 + m * 60, 20));
  for (double m : {5.0, 25.0, 45.0, 65.0, 85.0, 105.0})
    out.push_back(healthy(id(), 6 * 3600 + m * 60));
  out.push_back(cut_batch(id(), 7 * 3600 + 900));
  return out;
}

// A healthy day: a session every 20 minutes, more in the afternoon.
inline std::vector<Session> normal_day() {
  std::vector<Session> out;
  int n = 0;
  for (double t = 300; t < 86400; t += (t > 13 * 3600 && t < 17 * 3600) ? 600 : 1200)
    out.push_back(healthy("s-" + std::to_string(n++), t));
  return out;
}

}  // namespace retrystorm::testlogs
