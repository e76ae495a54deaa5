// The server's waiting room (docs/agent-engine.md): queued jobs served by
// the discipline, FIFO, LIFO (non-preemptive) or FIFO with CoDel at dequeue
// (RFC 8289). A job given up while queued is marked shed and leaves when it
// reaches an end of the ring, so nothing is erased from the middle.
#pragma once

#include <cmath>
#include <cstdint>

#include "engines/agent/entities.hpp"
#include "engines/ring_queue.hpp"
#include "model/scenario.hpp"

namespace retrystorm::agent {

// Job indices: FIFO pops the front, LIFO the back.
using JobRing = RingQueue<uint32_t>;

// The server keys of a scenario (an unnamed struct there).
using ServerSpec = decltype(Scenario::server);

class ServerQueue {
 public:
  ServerQueue(const ServerSpec& server, JobRing& ring, Pool<Job>& jobs)
      : server_(server), ring_(ring), jobs_(jobs) {}

  double waiting() const { return waiting_; }  // not in service, not shed

  void push(uint32_t job_id) {
    ring_.push_back(job_id);
    ++waiting_;
  }

  // A queued job whose caller gave up (server.shed_abandoned).
  void shed(uint32_t job_id) {
    jobs_[job_id].state = kShed;
    --waiting_;
    while (!ring_.empty() && jobs_[ring_.front()].state == kShed) {
      free_job(jobs_, ring_.front());
      ring_.pop_front();
    }
  }

  // The job to serve next, kNone when none waits. CoDel hands the jobs it
  // drops to `drop` (the server refuses them) before it returns.
  template <typename Drop>
  uint32_t next(double now, Drop drop) {
    return server_.discipline == QueueDiscipline::codel ? codel_dequeue(now, drop) : take_next();
  }

 private:
  // The next queued job, by the discipline (FIFO for CoDel too).
  uint32_t take_next() {
    bool lifo = server_.discipline == QueueDiscipline::lifo;
    for (;;) {
      if (ring_.empty()) return kNone;
      uint32_t job_id = lifo ? ring_.back() : ring_.front();
      if (lifo)
        ring_.pop_back();
      else
        ring_.pop_front();
      if (jobs_[job_id].state == kShed) {
        free_job(jobs_, job_id);
        continue;
      }
      --waiting_;
      return job_id;
    }
  }

  // Once the queueing delay has stayed above target for an interval, drop
  // at the head at intervals shrinking as interval / sqrt(drops).
  uint32_t codel_pop(double now, bool& ok_to_drop) {
    ok_to_drop = false;
    uint32_t job_id = take_next();
    if (job_id == kNone) {
      above_since_set_ = false;
      return kNone;
    }
    double sojourn = now - jobs_[job_id].sent_s;
    if (sojourn < server_.codel_target_s || waiting_ == 0) {
      above_since_set_ = false;
    } else if (!above_since_set_) {
      above_since_set_ = true;
      first_above_ = now + server_.codel_interval_s;
    } else if (now >= first_above_) {
      ok_to_drop = true;
    }
    return job_id;
  }

  double control_law(double t) const {
    return t + server_.codel_interval_s / std::sqrt(static_cast<double>(drop_count_));
  }

  template <typename Drop>
  uint32_t codel_dequeue(double now, Drop drop) {
    bool ok = false;
    uint32_t job_id = codel_pop(now, ok);
    if (job_id == kNone) {
      dropping_ = false;
      return kNone;
    }
    if (dropping_) {
      if (!ok) {
        dropping_ = false;
      } else {
        while (dropping_ && now >= drop_next_) {
          drop(job_id);
          ++drop_count_;
          job_id = codel_pop(now, ok);
          if (job_id == kNone) {
            dropping_ = false;
            return kNone;
          }
          if (!ok)
            dropping_ = false;
          else
            drop_next_ = control_law(drop_next_);
        }
      }
    } else if (ok) {
      drop(job_id);
      job_id = codel_pop(now, ok);
      dropping_ = true;
      uint64_t delta = drop_count_ - last_drop_count_;
      drop_count_ = delta > 1 && now - drop_next_ < 16 * server_.codel_interval_s ? delta : 1;
      drop_next_ = control_law(now);
      last_drop_count_ = drop_count_;
    }
    return job_id;
  }

  const ServerSpec& server_;
  JobRing& ring_;
  Pool<Job>& jobs_;
  double waiting_ = 0;
  bool above_since_set_ = false, dropping_ = false;
  double first_above_ = 0, drop_next_ = 0;
  uint64_t drop_count_ = 0, last_drop_count_ = 0;
};

}  // namespace retrystorm::agent
