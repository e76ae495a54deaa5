// The discrete-event kernel (engines/event_queue.hpp) that the agent and
// session engines share: events fire by instant, then priority class, then
// the order they were scheduled in, whatever order they were pushed in.
#include "engines/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engines/calendar_queue.hpp"
#include "random/rng.hpp"

using namespace retrystorm;

namespace {

struct Pushed {
  double t;
  uint64_t priority;
  uint32_t id;  // the push's number
};

}  // namespace

TEST(EventQueue, FiresByInstantThenPriorityThenSchedulingOrder) {
  // Few distinct instants and priorities, so most events tie with others.
  Rng rng(7);
  EventQueue<EntityRef> queue;
  std::vector<Pushed> pushed;
  for (uint32_t id = 0; id < 20000; ++id) {
    Pushed p{static_cast<double>(rng.next() % 50), rng.next() % 4, id};
    pushed.push_back(p);
    queue.push(p.t, p.priority, {id, 0});
  }
  std::stable_sort(pushed.begin(), pushed.end(), [](const Pushed& a, const Pushed& b) {
    return a.t != b.t ? a.t < b.t : a.priority < b.priority;
  });
  for (const Pushed& p : pushed) {
    ASSERT_FALSE(queue.empty());
    EXPECT_EQ(queue.top().key.t, p.t);
    EXPECT_EQ(queue.top().key.order >> kPriorityShift, p.priority);
    EXPECT_EQ(queue.top().what.index, p.id);
    queue.pop();
  }
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.next_key().t, kNever.t);
}

TEST(EventQueue, ClearRestartsTheSequenceSoRunsRepeat) {
  EventQueue<EntityRef> queue;
  queue.push(1, 0, {1, 0});
  queue.clear();
  queue.push(2, 3, {2, 0});
  EXPECT_EQ(queue.top().key.order, order_of(3, 0));
  EXPECT_EQ(queue.size(), 1u);
}

TEST(EventQueue, BeforeOrdersByTimeThenOrder) {
  EXPECT_TRUE(before({1, 9}, {2, 0}));
  EXPECT_TRUE(before({1, 0}, {1, 1}));
  EXPECT_FALSE(before({1, 1}, {1, 1}));
  EXPECT_TRUE(before({5, 0}, kNever));
  EXPECT_FALSE(before(kNever, kNever));
}

TEST(EventLane, KeepsFiringOrderAndDropsOnlyStaleEventsWhenTheyPileUp) {
  EventLane<EntityRef> lane(order_of(2, 5));
  EXPECT_EQ(lane.next_key().t, kNever.t);
  // Even generations are live; the sweep waits for 2 * in_flight + a margin.
  auto live = [](const EventLane<EntityRef>::Event& e) { return e.what.generation % 2 == 0; };
  for (uint32_t i = 0; i < 5000; ++i) {
    lane.push(i, {i, i});
    lane.drop_stale_beyond(10, live);
  }
  EXPECT_LT(lane.size(), 5000u);  // swept at least once
  EXPECT_GT(lane.size(), 2000u);  // the live half, and what came since the sweep
  EXPECT_EQ(lane.next_key().order, order_of(2, 5));
  double last = -1;
  uint32_t live_seen = 0;
  while (!lane.empty()) {
    EXPECT_GT(lane.front().t, last);  // still in firing order
    last = lane.front().t;
    live_seen += live(lane.front());
    lane.pop();
  }
  EXPECT_EQ(live_seen, 2500u);  // no live event was dropped
}

// The tree of sources names the source a scan in index order would: the
// first of the earliest keys, over queues and lanes that watch it and keys
// that tie (the graph engine's order of events, docs/graph.md "Speed").
TEST(SourceTree, NamesTheSourceAScanInIndexOrderWould) {
  Rng rng(11);
  constexpr size_t kQueues = 5, kLanes = 6;
  SourceTree tree(kQueues + kLanes);
  std::vector<EventQueue<int>> queues(kQueues);
  std::vector<EventLane<int>> lanes(kLanes);
  for (size_t q = 0; q < kQueues; ++q) queues[q].watch(&tree, static_cast<uint16_t>(q));
  for (size_t l = 0; l < kLanes; ++l) {
    lanes[l].set_order(order_of(1, l % 2));  // ties with the queues' first events, and each other
    lanes[l].watch(&tree, static_cast<uint16_t>(kQueues + l));
  }
  for (uint16_t s = 0; s < kQueues + kLanes; ++s) tree.touch(s);
  std::vector<double> lane_end(kLanes, 0);
  auto key_of = [&](uint16_t s) {
    return s < kQueues ? queues[s].next_key() : lanes[s - kQueues].next_key();
  };
  int fired = 0;
  for (int step = 0; step < 20000; ++step) {
    // Pushes on whole instants, so that keys tie often.
    int pick = static_cast<int>(rng.uniform() * 3);
    size_t which = static_cast<size_t>(rng.uniform() * (kQueues + kLanes));
    double t = std::floor(rng.uniform() * 50) + step / 100;
    if (pick < 2 && which < kQueues) {
      queues[which].push(t, 1, step);
    } else if (pick < 2) {
      size_t l = which - kQueues;
      lane_end[l] = std::max(lane_end[l], t);  // a lane's events come in order
      lanes[l].push(lane_end[l], step);
    }
    tree.refresh(key_of);
    uint16_t scan = 0;
    for (uint16_t s = 1; s < kQueues + kLanes; ++s)
      if (before(key_of(s), key_of(scan))) scan = s;
    ASSERT_EQ(tree.next(), scan) << "step " << step;
    if (pick == 2 && tree.next_key().t < kNever.t) {  // fire the next event
      ++fired;
      if (scan < kQueues)
        queues[scan].pop();
      else
        lanes[scan - kQueues].pop();
    }
  }
  EXPECT_GT(fired, 5000);
}

// The calendar of retries (engines/calendar_queue.hpp) fires events in the
// heap's order exactly, whatever the width of its buckets: delays from none
// to far beyond its ring, ties at one instant, pushes between pops as an
// engine makes them, and a queue cleared and used again.
TEST(CalendarQueue, FiresInTheHeapsOrderWhateverTheBucketWidth) {
  for (double width : {1e-3, 0.03125, 1.0, 50.0}) {
    Rng rng(11);
    EventQueue<EntityRef> heap;
    CalendarQueue<EntityRef> calendar;
    calendar.set_width(width);
    for (int round = 0; round < 2; ++round) {
      double now = 0;
      uint32_t id = 0;
      for (int step = 0; step < 30000; ++step) {
        if (rng.uniform() < 0.55 || heap.empty()) {
          const double pick = rng.uniform();
          const double delay = pick < 0.1    ? 0.0                            // at once
                               : pick < 0.2  ? std::floor(rng.uniform() * 4)  // ties
                               : pick < 0.95 ? rng.exponential(2.0)
                               : pick < 0.99 ? 1e3 * rng.uniform()  // beyond the ring
                                             : 1e300;               // "never", in effect
          const uint64_t priority = rng.next() % 4;
          heap.push(now + delay, priority, {id, 0});
          calendar.push(now + delay, priority, {id, 0});
          ++id;
        } else {
          ASSERT_EQ(calendar.next_key().t, heap.next_key().t) << width;
          ASSERT_EQ(calendar.next_key().order, heap.next_key().order) << width;
          ASSERT_EQ(calendar.top().what.index, heap.top().what.index) << width;
          now = heap.top().key.t;
          heap.pop();
          calendar.pop();
        }
        ASSERT_EQ(calendar.size(), heap.size());
      }
      while (!heap.empty()) {
        ASSERT_EQ(calendar.top().what.index, heap.top().what.index) << width;
        heap.pop();
        calendar.pop();
      }
      EXPECT_TRUE(calendar.empty());
      EXPECT_EQ(calendar.next_key().t, kNever.t);
      heap.clear();
      calendar.clear();
    }
  }
}

// A bucket is sorted when its turn comes: crowded stretches of it (events
// at one instant, or pushed latest-first a hair apart) go through std::sort,
// the others through an insertion sort, and the order is the heap's.
TEST(CalendarQueue, SortsCrowdedBucketsInTheHeapsOrder) {
  EventQueue<EntityRef> heap;
  CalendarQueue<EntityRef> calendar;
  calendar.set_width(1.0);
  uint32_t id = 0;
  auto push = [&](double t, uint64_t priority) {
    heap.push(t, priority, {id, 0});
    calendar.push(t, priority, {id, 0});
    ++id;
  };
  for (int k = 0; k < 20000; ++k) push(5.5, static_cast<uint64_t>(k % 3));  // one instant
  for (int k = 20000; k > 0; --k) push(7.25 + k * 1e-12, 3);                // latest first
  for (int k = 0; k < 300; ++k) push(9.0 + (k % 7) * 0.1, 1);               // a few groups
  push(9.5, 0);
  while (!heap.empty()) {
    ASSERT_FALSE(calendar.empty());
    ASSERT_EQ(calendar.next_key().t, heap.next_key().t);
    ASSERT_EQ(calendar.next_key().order, heap.next_key().order);
    ASSERT_EQ(calendar.top().what.index, heap.top().what.index);
    // Events pushed now, for the bucket being fired, still come in order.
    if (heap.top().what.index % 1000 == 0) push(heap.top().key.t + 1e-9, 2);
    heap.pop();
    calendar.pop();
  }
  EXPECT_TRUE(calendar.empty());
}
