// The discrete-event kernel of the agent and session engines (docs/agent-engine.md).
// An event fires at an instant; events at one instant fire by their order: a
// priority class (the model's rule for ties) and then the order they were
// scheduled in, so a run is the same bytes on every platform.
// Events name an entity by (index, generation). An entity bumps its
// generation when what it waits for changes, which makes its pending events
// stale: they are dropped when they come up, never searched for or erased.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
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

// An event key as one unsigned 128-bit number with the same order as
// before(): instants are never negative, and the bits of a non-negative
// double order as the doubles do (the sign bit cleared, -0 ranks as +0). One
// comparison, no branch: the heap's pop picks the least of four children
// with it.
__extension__ using KeyRank = unsigned __int128;
inline KeyRank rank_of(EventKey k) {
  constexpr uint64_t kMagnitude = ~(uint64_t{1} << 63);
  return static_cast<KeyRank>(std::bit_cast<uint64_t>(k.t) & kMagnitude) << 64 | k.order;
}
// The key a rank was made of (-0 comes back as +0, which orders the same).
inline EventKey key_of_rank(KeyRank rank) {
  return {std::bit_cast<double>(static_cast<uint64_t>(rank >> 64)), static_cast<uint64_t>(rank)};
}
// `right` when `pick_right`, else `left`, as arithmetic (a select the
// compiler cannot turn into a branch).
inline size_t select_index(bool pick_right, size_t left, size_t right) {
  return left ^ ((left ^ right) & (size_t{0} - static_cast<size_t>(pick_right)));
}

// An entity as an event names it; stale once the entity's generation moved on.
struct EntityRef {
  uint32_t index;
  uint32_t generation;
};

// The next of many event sources (the graph engine's queues of every service
// and call, docs/graph.md "Speed"): a tournament tree over each source's next
// key, updated only for the sources whose next event changed (a queue that
// watches tells it on every change), instead of a scan of all of them per
// event. Ties go to the lower source index, as a scan in index order that
// keeps the first strict minimum: the same order of events.
class SourceTree {
 public:
  explicit SourceTree(size_t sources) {
    while (leaves_ < sources) leaves_ *= 2;
    ranks_.assign(leaves_, rank_of(kNever));
    winner_.resize(2 * leaves_);
    for (size_t s = 0; s < leaves_; ++s) winner_[leaves_ + s] = static_cast<uint16_t>(s);
    for (size_t i = leaves_ - 1; i >= 1; --i) winner_[i] = pick(winner_[2 * i], winner_[2 * i + 1]);
    dirty_.assign(leaves_, 0);
    changed_.resize(leaves_);  // each source once at most: the dirty flag
  }
  // The source's next key may have changed: read again at the next refresh.
  void touch(uint16_t source) {
    if (dirty_[source]) return;
    dirty_[source] = 1;
    changed_[touched_++] = source;
  }
  // Reads the touched sources' keys (`key_of(source)`) and replays their matches.
  template <typename KeyOf>
  void refresh(KeyOf key_of) {
    for (size_t c = 0; c < touched_; ++c) {
      uint16_t s = changed_[c];
      dirty_[s] = 0;
      ranks_[s] = rank_of(key_of(s));
      for (size_t i = (leaves_ + s) / 2; i >= 1; i /= 2)
        winner_[i] = pick(winner_[2 * i], winner_[2 * i + 1]);
    }
    touched_ = 0;
  }
  uint16_t next() const { return winner_[1]; }
  EventKey next_key() const { return key_of_rank(ranks_[winner_[1]]); }

 private:
  // The left one (the lower index) unless the right one is strictly earlier.
  // Keys are kept as ranks (rank_of): one comparison a match.
  uint16_t pick(uint16_t left, uint16_t right) const {
    return ranks_[right] < ranks_[left] ? right : left;
  }
  size_t leaves_ = 1;
  std::vector<KeyRank> ranks_;
  std::vector<uint16_t> winner_;  // 1 is the root; leaves_ + s is source s
  std::vector<uint8_t> dirty_;
  std::vector<uint16_t> changed_;  // the touched sources, the first touched_ of them
  size_t touched_ = 0;
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

  // Tells `tree` (as source `id`) whenever the next event may change.
  void watch(SourceTree* tree, uint16_t id) {
    tree_ = tree;
    id_ = id;
  }

  void push(double t, uint64_t priority, Payload what) {
    push_key({t, order_of(priority, sequence_++)}, what);
  }
  // An event whose key was made elsewhere (a CalendarQueue numbers its own).
  // Its parts are written where it lands, not built on the stack and copied
  // (read back before its stores had landed, that stalled every push).
  void push_key(EventKey key, Payload what) {
    if (tree_ && (heap_.empty() || before(key, heap_.front().key))) tree_->touch(id_);
    heap_.emplace_back();
    size_t i = heap_.size() - 1;
    while (i > 0) {
      size_t parent = (i - 1) / 4;
      if (!before(key, heap_[parent].key)) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i].key = key;
    heap_[i].what = what;
  }

  void pop() {
    if (tree_) tree_->touch(id_);
    Event last = heap_.back();
    heap_.pop_back();
    size_t n = heap_.size();
    if (n == 0) return;
    const KeyRank last_rank = rank_of(last.key);
    size_t i = 0;
    for (;;) {
      size_t first = 4 * i + 1;
      if (first >= n) break;
      auto [best, best_rank] = least_child(first, n);
      if (!(best_rank < last_rank)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }

  // The least of the children first .. first + 3 (those below n) and its
  // rank: with all four, two pairs and their winners, selected without a
  // branch (which child wins is a coin toss, and a branch on it mispredicts).
  std::pair<size_t, KeyRank> least_child(size_t first, size_t n) const {
    auto rank = [this](size_t i) { return rank_of(heap_[i].key); };
    size_t best = first;
    if (first + 3 < n) {
      size_t a = first + (rank(first + 1) < rank(first));
      size_t b = first + 2 + (rank(first + 3) < rank(first + 2));
      best = select_index(rank(b) < rank(a), a, b);
    } else {
      for (size_t c = first + 1; c < n; ++c) best = select_index(rank(c) < rank(best), best, c);
    }
    return {best, rank(best)};
  }

  // Empties the queue and restarts the sequence; keeps the memory for the next run.
  void clear() {
    if (tree_) tree_->touch(id_);
    heap_.clear();
    sequence_ = 0;
  }

 private:
  std::vector<Event, LargeAllocator<Event>> heap_;
  uint64_t sequence_ = 0;
  SourceTree* tree_ = nullptr;
  uint16_t id_ = 0;
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
  // Tells `tree` (as source `id`) whenever the next event may change.
  void watch(SourceTree* tree, uint16_t id) {
    tree_ = tree;
    id_ = id;
  }
  // A push changes the next event only into an empty lane (the lane fires in
  // the order pushed).
  void push(double t, const Payload& what) {
    if (tree_ && events_.empty()) tree_->touch(id_);
    events_.push_back({t, what});
  }
  void pop() {
    if (tree_) tree_->touch(id_);
    events_.pop_front();
  }
  void clear() {
    if (tree_) tree_->touch(id_);
    events_.clear();
  }

  // Drops the stale events (`live` says which are not) once there are more
  // than twice `in_flight` plus a margin that keeps the sweeps rare.
  // Drops the events at the front that `live` says will do nothing when
  // they fire, so that they never reach the event loop (a timer whose
  // attempt was answered long ago).
  template <typename Live>
  void drop_stale_front(Live live) {
    if (events_.empty() || live(events_.front())) return;
    if (tree_) tree_->touch(id_);
    do events_.pop_front();
    while (!events_.empty() && !live(events_.front()));
  }
  template <typename Live>
  void drop_stale_beyond(size_t in_flight, Live live) {
    if (events_.size() <= 2 * in_flight + kMargin) return;
    if (tree_) tree_->touch(id_);
    events_.retain_if(live);
  }

 private:
  static constexpr size_t kMargin = 4096;
  RingQueue<Event> events_;
  uint64_t order_;
  SourceTree* tree_ = nullptr;
  uint16_t id_ = 0;
};

}  // namespace retrystorm
