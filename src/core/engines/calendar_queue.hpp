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

  CalendarQueue() : ring_(static_cast<size_t>(kRing)) {}

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
  static constexpr int64_t kRing = 1024;  // buckets after the current one
  static constexpr int64_t kNoBucket = int64_t{1} << 62;
  static constexpr uint32_t kNoChunk = ~uint32_t{0};

  // A bucket's events live in chunks of a shared pool, linked in the order
  // pushed: the memory follows the events waiting, not the busiest bucket
  // each slot of the ring ever held.
  struct Chunk {
    static constexpr uint32_t kEvents = 20;
    Event events[kEvents];
    uint32_t count;
    uint32_t next;
  };
  struct Bucket {
    uint32_t first = kNoChunk, last = kNoChunk;
  };

  // The bucket of instant t: monotone in t, so an event of a later bucket
  // is strictly later than every event of an earlier one.
  int64_t bucket_of(double t) const {
    const double b = t * per_bucket_;
    return b < double(kNoBucket) ? static_cast<int64_t>(b) : kNoBucket;
  }

  void place(const Event& e) {
    const int64_t b = bucket_of(e.key.t);
    if (b <= current_) return soon_.push_key(e.key, e.what);
    ++later_;
    if (b < current_ + kRing) return append(ring_[static_cast<size_t>(b % kRing)], e);
    far_.push_back(e);
    far_first_ = std::min(far_first_, b);
  }

  void append(Bucket& bucket, const Event& e) {
    if (bucket.last == kNoChunk || chunks_[bucket.last].count == Chunk::kEvents) {
      uint32_t c =
          free_chunks_.empty() ? static_cast<uint32_t>(chunks_.size()) : free_chunks_.back();
      if (free_chunks_.empty())
        chunks_.emplace_back();
      else
        free_chunks_.pop_back();
      chunks_[c].count = 0;
      chunks_[c].next = kNoChunk;
      (bucket.last == kNoChunk ? bucket.first : chunks_[bucket.last].next) = c;
      bucket.last = c;
    }
    Chunk& chunk = chunks_[bucket.last];
    chunk.events[chunk.count++] = e;
  }

  // The heap ran dry: the next bucket that holds events goes into it.
  void refill() {
    while (soon_.empty() && later_ > 0) {
      if (later_ == far_.size()) current_ = std::max(current_, far_first_ - 1);  // skip the gap
      ++current_;
      if (far_first_ < current_ + kRing) bring_far_events_in();
      pour(ring_[static_cast<size_t>(current_ % kRing)]);
    }
  }

  void pour(Bucket& bucket) {
    for (uint32_t c = bucket.first; c != kNoChunk;) {
      const Chunk& chunk = chunks_[c];
      for (uint32_t k = 0; k < chunk.count; ++k)
        soon_.push_key(chunk.events[k].key, chunk.events[k].what);
      later_ -= chunk.count;
      free_chunks_.push_back(c);
      c = chunk.next;
    }
    bucket = {};
  }

  // The events beyond the ring whose buckets the ring now reaches move into it.
  void bring_far_events_in() {
    far_first_ = kNoBucket;
    size_t kept = 0;
    for (const Event& e : far_) {
      const int64_t b = bucket_of(e.key.t);
      if (b < current_ + kRing) {
        append(ring_[static_cast<size_t>(b % kRing)], e);
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
