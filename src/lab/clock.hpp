// The lab's shared time zero: the lab picks a Unix instant in milliseconds a
// little ahead, and the backend and the load generator count seconds from it
// on their steady clocks (one machine, one wall clock).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace retrystorm::lab {

using Clock = std::chrono::steady_clock;

inline long long unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Microseconds since the Unix epoch, read from the wall clock.
inline long long unix_us_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The steady-clock instant of the Unix time `t0_unix_ms`. The wall clock is
// read to the microsecond, so the backend's and the generator's time zeros
// agree to microseconds, not to a millisecond (a caller's give-up instant
// travels between them: kGiveUpHeader).
inline Clock::time_point steady_of_unix_ms(long long t0_unix_ms) {
  auto steady = Clock::now();
  return steady + std::chrono::microseconds(t0_unix_ms * 1000 - unix_us_now());
}

// One lab process stamps a message with the instant it leaves
// (`unix_us_stamp`); the one that receives it reads how long it took
// (`seconds_since_stamp`; callers check the stamp is there). One machine,
// one wall clock.
inline std::string unix_us_stamp() {
  return std::to_string(unix_us_now());
}
inline double seconds_since_stamp(std::string_view stamp) {
  return static_cast<double>(unix_us_now() - std::atoll(std::string(stamp).c_str())) / 1e6;
}

// The header (HTTP) or trailing metadata (gRPC) that carries the instant the
// backend sent its answer (unix_us_stamp), so the caller measures the way back.
inline constexpr const char* kAnsweredHeader = "x-rs-answered-unix-us";

// An instant far past any run (a service time of 1e300 s at a capacity near
// 0) is clamped to 10^9 s: in nanoseconds it wrapped into the past, and the
// timer fired at once (a frozen backend answered 200).
inline Clock::time_point at(Clock::time_point t0, double seconds) {
  constexpr double kFarest = 1e9;
  return t0 + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(std::min(seconds, kFarest)));
}

inline double seconds_since(Clock::time_point t0, Clock::time_point now = Clock::now()) {
  return std::chrono::duration<double>(now - t0).count();
}

// The measurement bins: how many cover the horizon, and the one an instant
// falls in (before time zero the first, past the horizon the last).
inline size_t bin_count(double horizon_s, double bin_s) {
  return static_cast<size_t>(std::ceil(horizon_s / bin_s - 1e-9));
}
inline size_t bin_index(double t, double bin_s, size_t bins) {
  return std::min(bins - 1, static_cast<size_t>(std::max(0.0, t) / bin_s));
}

// How late timers fired (seconds): the figures the report prints.
struct TimingError {
  double p50_s = 0, p99_s = 0, max_s = 0;
  size_t samples = 0;
};

// Keeps at most ~1 M samples (every k-th beyond), enough for a p99. A
// lateness below zero counts as on time; a `signed_samples` log keeps the
// sign (a gap that can go either way).
class LatenessLog {
 public:
  explicit LatenessLog(bool signed_samples = false) : signed_(signed_samples) {}
  void add(double late_s) {
    if (++seen_ % stride_ != 0) return;
    v_.push_back(static_cast<float>(signed_ ? late_s : std::max(0.0, late_s)));
    if (v_.size() >= kMax) {  // halve: keep every other sample
      for (size_t i = 0; i < v_.size() / 2; ++i) v_[i] = v_[2 * i];
      v_.resize(v_.size() / 2);
      stride_ *= 2;
    }
  }
  TimingError summary() const {
    TimingError e;
    e.samples = v_.size();
    if (v_.empty()) return e;
    std::vector<float> s = v_;
    std::sort(s.begin(), s.end());
    auto q = [&](double p) { return s[std::min(s.size() - 1, static_cast<size_t>(p * s.size()))]; };
    e.p50_s = q(0.5);
    e.p99_s = q(0.99);
    e.max_s = s.back();
    return e;
  }

 private:
  static constexpr size_t kMax = 1 << 20;
  std::vector<float> v_;
  size_t seen_ = 0, stride_ = 1;
  bool signed_ = false;
};

// The worst timer lateness per measurement bin, from the bin a timer was due
// in to the bin it fired in: a stall of the machine there holds arrivals and
// answers back and moves completions into a later bin (docs/lab.md,
// "Stalls of the machine").
class BinLateness {
 public:
  BinLateness(size_t bins, double bin_s) : max_s_(bins, 0.0), bin_s_(bin_s) {}
  void add(double due_s, double fired_s) {
    if (max_s_.empty() || fired_s <= due_s) return;
    for (size_t i = bin_of(due_s); i <= bin_of(fired_s); ++i)
      max_s_[i] = std::max(max_s_[i], fired_s - due_s);
  }
  const std::vector<double>& max_s() const { return max_s_; }

 private:
  size_t bin_of(double t) const { return bin_index(t, bin_s_, max_s_.size()); }
  std::vector<double> max_s_;
  double bin_s_;
};

}  // namespace retrystorm::lab
