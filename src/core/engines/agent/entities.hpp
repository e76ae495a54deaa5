// The agent engine's entities (docs/agent-engine.md): calls made to the
// retrying layers and jobs at the server, kept in pools with free lists and
// named by (index, generation) so that stale references cost nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "engines/large_allocator.hpp"
#include "model/scenario.hpp"
#include "policies/budget.hpp"

namespace retrystorm::agent {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Call::state (kHeld: for a token; kPooled: for a connection, client.max_connections)
enum : uint8_t { kCallFree, kWaiting, kBackoff, kHeld, kPooled };
enum : uint8_t { kJobFree, kQueued, kInService, kShed };  // Job::state

// What ended a call's latest failed attempt, kept for the retry it backs off
// toward: a timeout or the error answer heard. The budget prices the retry by
// it, and a retry it then refuses fails the call with it: the layer above
// hears what this one heard last (a timeout below as a gateway's 503).
struct LastHeard {
  uint8_t answer = static_cast<uint8_t>(FailureClass::timeout);

  static LastHeard of(bool timed_out, FailureClass heard) {
    return {static_cast<uint8_t>(timed_out ? FailureClass::timeout : heard)};
  }
  bool timed_out() const { return answer == static_cast<uint8_t>(FailureClass::timeout); }
  RetryCause cause() const { return timed_out() ? RetryCause::timeout : RetryCause::error; }
  FailureClass passed_up() const {
    return timed_out() ? FailureClass::http_503 : static_cast<FailureClass>(answer);
  }
};

// A call made to a retrying layer: a user request at layer 0, or a call of
// layer l - 1 to layer l. It sends attempts one at a time; a hedging layer's
// call keeps its earlier attempts in flight while it sends the next.
struct Call {
  double start_s;   // the user request's arrival (for the deadline)
  double sent_s;    // the current attempt's send instant
  double made_s;    // when the caller's attempt made this call
  uint32_t parent;  // the calling Call, kNone for the user
  uint32_t parent_gen;
  uint32_t gen;         // moves whenever what the call waits for changes
  uint32_t gen0;        // the first attempt still waited for: answers of gen0..gen count
  uint16_t hedges_out;  // hedging: attempts in flight
  bool first_out;       // hedging: the first attempt is among them
  bool hedge_due;       // hedging: the next attempt waits its backoff (a kRetry event)
  uint32_t request;
  uint32_t job;  // innermost layer: the current attempt at the server
  uint16_t attempt;
  uint8_t layer;
  uint8_t state;
  bool first;       // every call above is on its first attempt
  LastHeard heard;  // what ended the call's previous attempt (its retry followed it)
  uint8_t host;     // innermost layer: the host of its current attempt (server.hosts)
  bool holds_slot;  // hedging: the request's one retry slot is held (Envoy's budget)
  uint32_t ticket;  // innermost layer: what the client's breaker let it go with
};

static_assert(sizeof(Call) == 64, "a call fills one cache line");

// An attempt at the server. 24 bytes: a stuck queue holds a million of them,
// so what only a job in service needs is kept beside its slot (Serving), and
// what only the request log or several hosts need beside the pool (JobNote,
// the engine's hosts of jobs).
struct Job {
  double sent_s;
  uint32_t caller;
  uint32_t caller_gen;
  uint32_t gen;
  uint32_t slot : 24;  // in service: its index among the jobs in service (server.slots <= 100000)
  uint32_t state : 8;
};

static_assert(sizeof(Job) == 24, "a million queued jobs in 24 MB");

// A job's request and attempt number, for the request log only.
struct JobNote {
  uint32_t request;
  uint16_t attempt;
};

// A job in service and the work it has left.
struct Serving {
  uint32_t job;
  double last_s;     // when work_left was brought up to date
  double work_left;  // seconds of work at full capacity
};

template <typename T>
class Pool {
 public:
  uint32_t alloc() {
    if (!free_.empty()) {
      uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
    items_.push_back(T{});
    return static_cast<uint32_t>(items_.size() - 1);
  }
  void release(uint32_t i) { free_.push_back(i); }
  // Room for n entities without moving the ones made (a buffer this large
  // is mapped, and its pages are touched only as entities are made).
  void reserve(size_t n) { items_.reserve(n); }
  T& operator[](uint32_t i) { return items_[i]; }
  const T& operator[](uint32_t i) const { return items_[i]; }
  size_t slots() const { return items_.size(); }
  void clear() {  // keeps the memory for the next run
    items_.clear();
    free_.clear();
  }
  // The most entities alive at once: a slot is made only when every slot
  // is in use, so the slots made are that high-water mark.
  uint64_t peak() const { return items_.size(); }

 private:
  std::vector<T, LargeAllocator<T>> items_;
  std::vector<uint32_t> free_;
};

// Frees an entity of a pool: marked free, its generation moved on (events
// naming it go stale), its index back on the free list.
template <typename T>
void free_entity(Pool<T>& pool, uint32_t i, uint8_t free_state) {
  pool[i].state = free_state;
  ++pool[i].gen;
  pool.release(i);
}

// Sets entry `id` of a table kept beside a pool (what only some runs need of
// an entity), growing the table by half again when `id` is past its end.
template <typename T>
void set_beside(std::vector<T>& table, uint32_t id, const T& value) {
  if (table.size() <= id) table.resize(id + 1 + id / 2);
  table[id] = value;
}

// An attempt of a hedging call still out at a run's end, for its in_flight
// row in the request log: the stacked and graph engines write one for each
// hedge their call still awaits, and none for a hedge whose failed row is
// written (docs/agent-engine.md, docs/graph.md).
struct HedgeOut {
  uint32_t call;
  int attempt;
  double sent_s;
};

// By call, then attempt: the order of the rows.
inline void sort_hedges(std::vector<HedgeOut>& hedges) {
  std::sort(hedges.begin(), hedges.end(), [](const HedgeOut& a, const HedgeOut& b) {
    return a.call != b.call ? a.call < b.call : a.attempt < b.attempt;
  });
}

// `row(hedge)` for each hedge of call `call_id` in `hedges` (sorted), with
// `next` walking the list as the calls are visited in index order.
template <typename Row>
void each_hedge_of(uint32_t call_id, const std::vector<HedgeOut>& hedges, size_t& next, Row row) {
  for (; next < hedges.size() && hedges[next].call <= call_id; ++next)
    if (hedges[next].call == call_id) row(hedges[next]);
}

inline void free_job(Pool<Job>& jobs, uint32_t job_id) {
  free_entity(jobs, job_id, kJobFree);
}

}  // namespace retrystorm::agent
