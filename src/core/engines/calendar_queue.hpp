// Events far apart in time, many at once: the backoff retries of a stuck
// run (docs/agent-engine.md, "Performance"). The events due soon sit in a
// small heap (engines/event_queue.hpp), which stays in the fastest cache;
// the later ones wait unsorted in buckets of one width of time each, and a
// bucket is poured into the heap when the heap runs dry. An event keeps the
// key it was given when pushed, so events fire in exactly the heap's order:
// by instant, then priority class, then the order they were scheduled in.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engines/event_queue.hpp"

namespace retrystorm {

template <typename Payload>
class CalendarQueue {
 public:
  using Event = typename EventQueue<Payload>::Event;

  // The width of a bucket, in seconds (any width gives the same order; it
  // sets how many events wait in the heap at once). Empties the queue.
  void set_width(double width_s) {
    clear();
    per_bucket_ = width_s > 0 ? 1 / width_s : 1;
  }

  bool empty() const { return soon_.empty() && later_ == 0; }
  size_t size() const { return soon_.size() + later_; }

  void push(double t, uint64_t priority, const Payload& what) {
    place({{t, order_of(priority, sequence_++)}, what});
  }

  // The next event's key; kNever when there is none.
  EventKey next_key() {
    if (soon_.empty() && later_ > 0) refill();
    return soon_.next_key();
  }
  const Event& top() {
    if (soon_.empty()) refill();
    return soon_.top();
  }
  void pop() {
    if (soon_.empty()) refill();
    soon_.pop();
  }

  // Empties the queue and restarts the sequence; keeps the memory for the next run.
  void clear() {
    soon_.clear();
    for (std::vector<Event>& bucket : ring_) bucket.clear();
    far_.clear();
    sequence_ = 0;
    current_ = 0;
    later_ = 0;
    far_first_ = kNoBucket;
  }

 private:
  static constexpr int64_t kRing = 1024;  // buckets after the current one
  static constexpr int64_t kNoBucket = int64_t{1} << 62;

  // The bucket of instant t: monotone in t, so an event of a later bucket
  // is strictly later than every event of an earlier one.
  int64_t bucket_of(double t) const {
    const double b = t * per_bucket_;
    return b < double(kNoBucket) ? static_cast<int64_t>(b) : kNoBucket;
  }

  void place(const Event& e) {
    const int64_t b = bucket_of(e.key.t);
    if (b <= current_) return soon_.push_key(e.key, e.what);
    if (ring_.empty()) ring_.resize(static_cast<size_t>(kRing));
    ++later_;
    if (b < current_ + kRing) return ring_[static_cast<size_t>(b % kRing)].push_back(e);
    far_.push_back(e);
    far_first_ = std::min(far_first_, b);
  }

  // The heap ran dry: the next bucket that holds events goes into it.
  void refill() {
    while (soon_.empty() && later_ > 0) {
      if (later_ == far_.size()) current_ = std::max(current_, far_first_ - 1);  // skip the gap
      ++current_;
      if (far_first_ < current_ + kRing) bring_far_events_in();
      std::vector<Event>& bucket = ring_[static_cast<size_t>(current_ % kRing)];
      for (const Event& e : bucket) soon_.push_key(e.key, e.what);
      later_ -= bucket.size();
      bucket.clear();
    }
  }

  // The events beyond the ring whose buckets the ring now reaches move into it.
  void bring_far_events_in() {
    far_first_ = kNoBucket;
    size_t kept = 0;
    for (const Event& e : far_) {
      const int64_t b = bucket_of(e.key.t);
      if (b < current_ + kRing) {
        ring_[static_cast<size_t>(b % kRing)].push_back(e);
      } else {
        far_[kept++] = e;
        far_first_ = std::min(far_first_, b);
      }
    }
    far_.resize(kept);
  }

  EventQueue<Payload> soon_;  // the current bucket and those before it
  // Bucket b at b % kRing, for b in (current_, current_ + kRing): the slot of
  // the current bucket is empty, so a slot poured holds one bucket only.
  std::vector<std::vector<Event>> ring_;
  std::vector<Event> far_;  // beyond the ring
  double per_bucket_ = 1;   // buckets per second
  uint64_t sequence_ = 0;
  int64_t current_ = 0;            // the heap holds the events of buckets up to this one
  size_t later_ = 0;               // events in the ring and beyond it
  int64_t far_first_ = kNoBucket;  // the earliest bucket beyond the ring
};

}  // namespace retrystorm
