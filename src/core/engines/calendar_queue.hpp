// Events far apart in time, many at once: the backoff retries of a stuck
// run (docs/agent-engine.md, "Performance"). The later events wait unsorted
// in buckets of one width of time each. When the events due run out, the
// next bucket is sorted (spread by instant, then each small group put in
// order) and fired from the front; an event pushed for the current bucket or
// before it goes into a small heap beside it (engines/event_queue.hpp). An
// event keeps the key it was given when pushed, so events fire in exactly
// the heap's order: by instant, then priority class, then the order they
// were scheduled in.
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

  CalendarQueue() : ring_(static_cast<size_t>(kRing)) {}

  // The width of a bucket, in seconds (any width gives the same order; it
  // sets how many events are sorted at once). Empties the queue.
  void set_width(double width_s) {
    clear();
    per_bucket_ = width_s > 0 ? 1 / width_s : 1;
  }

  bool empty() const { return run_left() == 0 && soon_.empty() && later_ == 0; }
  size_t size() const { return run_left() + soon_.size() + later_; }

  // The payload by value and the key in its parts, written straight into
  // place: an event built on the stack and copied whole was read back
  // before its stores had landed (a stall on every push).
  void push(double t, uint64_t priority, Payload what) {
    place(t, order_of(priority, sequence_++), what);
  }

  // The next event's key; kNever when there is none.
  EventKey next_key() {
    if (run_left() == 0 && soon_.empty() && later_ > 0) refill();
    return from_run() ? run_[next_].key : soon_.next_key();
  }
  const Event& top() {
    if (run_left() == 0 && soon_.empty()) refill();
    return from_run() ? run_[next_] : soon_.top();
  }
  void pop() {
    if (run_left() == 0 && soon_.empty()) refill();
    if (from_run())
      ++next_;
    else
      soon_.pop();
  }

  // Empties the queue and restarts the sequence; keeps the memory for the next run.
  void clear() {
    soon_.clear();
    run_.clear();
    next_ = 0;
    std::fill(ring_.begin(), ring_.end(), Bucket{});
    chunks_.clear();
    free_chunks_.clear();
    far_.clear();
    sequence_ = 0;
    current_ = 0;
    later_ = 0;
    far_first_ = kNoBucket;
  }

 private:
  static constexpr int64_t kRing = 1024;  // buckets after the current one (a power of two)
  static constexpr int64_t kNoBucket = int64_t{1} << 62;
  static constexpr uint32_t kNoChunk = ~uint32_t{0};

  // A bucket's events live in chunks of a shared pool, linked in the order
  // pushed: the memory follows the events waiting, not the busiest bucket
  // each slot of the ring ever held.
  struct Chunk {
    static constexpr uint32_t kEvents = 20;
    Event events[kEvents];
    uint32_t next;
  };
  // How full its last chunk is, kept here rather than in the chunk: a push
  // then reads no line of a chunk, only writes one (the earlier chunks are full).
  struct Bucket {
    uint32_t first = kNoChunk, last = kNoChunk;
    uint32_t filled = 0;  // events in the last chunk
  };

  // The bucket of instant t: monotone in t, so an event of a later bucket
  // is strictly later than every event of an earlier one.
  int64_t bucket_of(double t) const {
    const double b = t * per_bucket_;
    return b < double(kNoBucket) ? static_cast<int64_t>(b) : kNoBucket;
  }

  // Bucket b's place in the ring (b is never negative: instants are not).
  static size_t slot(int64_t b) { return static_cast<size_t>(b) & (kRing - 1); }

  void place(double t, uint64_t order, Payload what) {
    const int64_t b = bucket_of(t);
    if (b <= current_) return soon_.push_key({t, order}, what);
    ++later_;
    if (b < current_ + kRing) return append(ring_[slot(b)], t, order, what);
    far_.push_back({{t, order}, what});
    far_first_ = std::min(far_first_, b);
  }

  void append(Bucket& bucket, double t, uint64_t order, Payload what) {
    if (bucket.last == kNoChunk || bucket.filled == Chunk::kEvents) {
      uint32_t c =
          free_chunks_.empty() ? static_cast<uint32_t>(chunks_.size()) : free_chunks_.back();
      if (free_chunks_.empty())
        chunks_.emplace_back();
      else
        free_chunks_.pop_back();
      chunks_[c].next = kNoChunk;
      (bucket.last == kNoChunk ? bucket.first : chunks_[bucket.last].next) = c;
      bucket.last = c;
      bucket.filled = 0;
    }
    Event& e = chunks_[bucket.last].events[bucket.filled++];
    e.key.t = t;
    e.key.order = order;
    e.what = what;
  }

  size_t run_left() const { return run_.size() - next_; }
  // The sorted bucket's next event fires before the heap's (a run is left).
  bool from_run() const {
    return run_left() > 0 && (soon_.empty() || before(run_[next_].key, soon_.top().key));
  }

  // The events due ran out: the next bucket that holds events is sorted.
  void refill() {
    run_.clear();
    next_ = 0;
    while (run_.empty() && later_ > 0) {
      if (later_ == far_.size()) current_ = std::max(current_, far_first_ - 1);  // skip the gap
      ++current_;
      if (far_first_ < current_ + kRing) bring_far_events_in();
      pour(ring_[slot(current_)]);
    }
    sort_run();
  }

  void pour(Bucket& bucket) {
    for (uint32_t c = bucket.first; c != kNoChunk;) {
      const Chunk& chunk = chunks_[c];
      const uint32_t count = c == bucket.last ? bucket.filled : Chunk::kEvents;
      run_.insert(run_.end(), chunk.events, chunk.events + count);
      later_ -= count;
      free_chunks_.push_back(c);
      c = chunk.next;
    }
    bucket = {};
  }

  // The current bucket's events in firing order. Spread over as many equal
  // stretches of the bucket as there are events, by instant (a counting
  // sort, which keeps the order pushed), they come out nearly sorted; each
  // stretch's few are then put in order by std::sort (an insertion sort for
  // so few; a rare crowded stretch, events at one instant say, is sorted in
  // n log n), so that no bucket costs more than a sort.
  void sort_run() {
    const size_t n = run_.size();
    if (n < 2) return;
    const double bucket_start = double(current_);
    auto stretch = [&](const Event& e) {
      const double x = (e.key.t * per_bucket_ - bucket_start) * double(n);
      return x > 0 ? std::min(static_cast<size_t>(x), n - 1) : size_t{0};
    };
    starts_.assign(n + 1, 0);
    stretches_.resize(n);
    for (size_t i = 0; i < n; ++i) ++starts_[(stretches_[i] = stretch(run_[i])) + 1];
    for (size_t k = 1; k <= n; ++k) starts_[k] += starts_[k - 1];
    spread_.resize(n);
    for (size_t i = 0; i < n; ++i)
      spread_[starts_[stretches_[i]]++] = run_[i];  // each start moves to its end
    run_.swap(spread_);
    auto earlier = [](const Event& a, const Event& b) { return before(a.key, b.key); };
    for (size_t k = 0, first = 0; k < n; first = starts_[k++]) {
      const size_t last = starts_[k];  // stretch k is [first, last)
      if (last - first > 1) std::sort(run_.begin() + first, run_.begin() + last, earlier);
    }
  }

  // The events beyond the ring whose buckets the ring now reaches move into it.
  void bring_far_events_in() {
    far_first_ = kNoBucket;
    size_t kept = 0;
    for (const Event& e : far_) {
      const int64_t b = bucket_of(e.key.t);
      if (b < current_ + kRing) {
        append(ring_[slot(b)], e.key.t, e.key.order, e.what);
      } else {
        far_[kept++] = e;
        far_first_ = std::min(far_first_, b);
      }
    }
    far_.resize(kept);
  }

  std::vector<Event> run_;  // the current bucket, sorted; run_[next_] fires next
  size_t next_ = 0;
  EventQueue<Payload> soon_;       // pushed for the current bucket or before it
  std::vector<Event> spread_;      // sort_run's
  std::vector<size_t> starts_;     // sort_run's: where each stretch starts
  std::vector<size_t> stretches_;  // sort_run's: each event's stretch
  // Bucket b at b % kRing, for b in (current_, current_ + kRing): the slot of
  // the current bucket is empty, so a slot poured holds one bucket only.
  std::vector<Bucket> ring_;
  std::vector<Chunk> chunks_;
  std::vector<uint32_t> free_chunks_;
  std::vector<Event> far_;  // beyond the ring
  double per_bucket_ = 1;   // buckets per second
  uint64_t sequence_ = 0;
  int64_t current_ = 0;            // the heap holds the events of buckets up to this one
  size_t later_ = 0;               // events in the ring and beyond it
  int64_t far_first_ = kNoBucket;  // the earliest bucket beyond the ring
};

}  // namespace retrystorm
