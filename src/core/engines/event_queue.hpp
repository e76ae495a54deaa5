// The discrete-event kernel of the agent and session engines (docs/agent-engine.md).
// An event fires at an instant; events at one instant fire by their order: a
// priority class (the model's rule for ties) and then the order they were
// scheduled in, so a run is the same bytes on every platform.
// Events name an entity by (index, generation). An entity bumps its
// generation when what it waits for changes, which makes its pending events
// stale: they are dropped when they come up, never searched for or erased.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "engines/ring_queue.hpp"

namespace retrystorm {

// When an event fires: its instant, then its order among the events of that instant.
struct EventKey {
  double t;
  uint64_t order;
};

// Priority class in the top byte, the scheduling sequence below it.
inline constexpr int kPriorityShift = 56;
inline constexpr uint64_t order_of(uint64_t priority, uint64_t sequence = 0) {
  return priority << kPriorityShift | sequence;
}

// Strictly earlier. Bitwise, not short-circuit: which of two sources fires
// next is a coin toss in a queueing model, and a branch on it mispredicts.
inline bool before(EventKey a, EventKey b) {
  return (a.t < b.t) | ((a.t == b.t) & (a.order < b.order));
}

inline constexpr EventKey kNever{std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<uint64_t>::max()};

// An entity as an event names it; stale once the entity's generation moved on.
struct EntityRef {
  uint32_t index;
  uint32_t generation;
};

// Events at any instant: a 4-ary min-heap (half the depth of a binary heap,
// the four children of a node on one cache line or two).
template <typename Payload>
class EventQueue {
 public:
  struct Event {
    EventKey key;
    Payload what;
  };

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  // The next event's key; kNever when there is none.
  EventKey next_key() const { return heap_.empty() ? kNever : heap_.front().key; }

  void push(double t, uint64_t priority, const Payload& what) {
    Event e{{t, order_of(priority, sequence_++)}, what};
    heap_.push_back(e);
    size_t i = heap_.size() - 1;
    while (i > 0) {
      size_t parent = (i - 1) / 4;
      if (!before(e.key, heap_[parent].key)) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  void pop() {
    Event last = heap_.back();
    heap_.pop_back();
    size_t n = heap_.size();
    if (n == 0) return;
    size_t i = 0;
    for (;;) {
      size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      size_t end = std::min(first + 4, n);
      for (size_t c = first + 1; c < end; ++c)
        if (before(heap_[c].key, heap_[best].key)) best = c;
      if (!before(heap_[best].key, last.key)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }

  // Empties the queue and restarts the sequence; keeps the memory for the next run.
  void clear() {
    heap_.clear();
    sequence_ = 0;
  }

 private:
  std::vector<Event> heap_;
  uint64_t sequence_ = 0;
};

// Events of one kind scheduled in the order they fire (a constant delay, like
// a layer's timeout), all at one order value: a FIFO beside the heap, no
// sifting. Stale ones are dropped in bulk when they outnumber the live ones,
// so memory follows what is in flight.
template <typename Payload>
class EventLane {
 public:
  struct Event {
    double t;
    Payload what;
  };

  explicit EventLane(uint64_t order = 0) : order_(order) {}
  void set_order(uint64_t order) { order_ = order; }
  uint64_t order() const { return order_; }

  bool empty() const { return events_.empty(); }
  size_t size() const { return events_.size(); }
  const Event& front() const { return events_.front(); }
  EventKey next_key() const { return empty() ? kNever : EventKey{front().t, order_}; }
  void push(double t, const Payload& what) { events_.push_back({t, what}); }
  void pop() { events_.pop_front(); }
  void clear() { events_.clear(); }

  // Drops the stale events (`live` says which are not) once there are more
  // than twice `in_flight` plus a margin that keeps the sweeps rare.
  template <typename Live>
  void drop_stale_beyond(size_t in_flight, Live live) {
    if (events_.size() > 2 * in_flight + kMargin) events_.retain_if(live);
  }

 private:
  static constexpr size_t kMargin = 4096;
  RingQueue<Event> events_;
  uint64_t order_;
};

}  // namespace retrystorm
