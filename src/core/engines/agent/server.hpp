// The agent engine's server (docs/agent-engine.md): slots that serve jobs at
// a rate the incident changes, the waiting room and its discipline
// (server_queue.hpp), the service-time draw, and the time-average of the jobs
// in the system. Who waits for a job is the clients' business: the server
// hands refused jobs back through a callback and the engine hears of
// completions from the event queue. The per-event paths are inline here; the
// engine runs ~40 M events/s and a call across files costs a visible share.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "engines/agent/agent.hpp"
#include "engines/agent/entities.hpp"
#include "engines/agent/server_queue.hpp"
#include "engines/event_queue.hpp"
#include "random/rng.hpp"

namespace retrystorm::agent {

// The engine's events at one instant, lowest first: a response arriving
// exactly at the timeout is on time (the fluid model's "<= timeout_s").
enum : uint64_t { kComplete = 0, kRate = 1, kTimeout = 2, kRetry = 3, kArrival = 4 };

// Completions and retries name a job or a call; capacity changes carry
// index 0 (the incident starts) or 1 (it ends).
using Events = EventQueue<EntityRef>;

// The server's memory, kept between runs by the engine's workspace.
struct ServerMemory {
  Pool<Job> jobs;
  JobRing queue;
  std::vector<Serving> in_service;  // Job::slot is the index here
  std::vector<JobNote> notes;       // by job, when the request log is on (Server::note_jobs)

  void clear() {
    jobs.clear();
    queue.clear();
    in_service.clear();
    notes.clear();
  }
};

class Server {
 public:
  Server(const ServerSpec& spec, ServerMemory& memory, Events& events, Rng& rng)
      : Server(spec, memory, memory.jobs, events, rng) {}
  // One of a dependency's hosts (server.hosts): its own queue and slots in
  // `memory`, its jobs in the pool every host shares, so that a job's number
  // names it whichever host serves it.
  Server(const ServerSpec& spec, ServerMemory& memory, Pool<Job>& jobs, Events& events, Rng& rng);

  Job& job(uint32_t job_id) { return jobs_[job_id]; }
  const Job& job(uint32_t job_id) const { return jobs_[job_id]; }
  long in_system() const { return in_system_; }  // queued and in service
  double rate() const { return rate_; }          // the capacity factor now
  uint64_t peak_jobs() const { return jobs_.peak(); }

  // Keep each job's request and attempt in `notes` (the request log's): the
  // hosts of a dependency share one, as they share the pool.
  void note_jobs(std::vector<JobNote>& notes) { notes_ = &notes; }
  // The job's request and attempt; zeros unless noted.
  JobNote note(uint32_t job_id) const { return notes_ ? (*notes_)[job_id] : JobNote{}; }

  // A job for the caller's current attempt, not yet arrived.
  uint32_t new_job(uint32_t caller, const Call& call, double now) {
    return new_job(caller, call.gen, call.request, call.attempt, now);
  }
  // The same for a caller of any kind (a graph's visit to a service).
  uint32_t new_job(uint32_t caller, uint32_t caller_gen, uint32_t request, uint16_t attempt,
                   double now) {
    uint32_t job_id = jobs_.alloc();
    Job& job = jobs_[job_id];
    job.sent_s = now;
    job.caller = caller;
    job.caller_gen = caller_gen;
    ++job.gen;
    if (notes_) set_beside(*notes_, job_id, {request, attempt});
    return job_id;
  }

  // The job arrives: served at once by an idle slot, queued, or refused by
  // a full queue or, when it `may_queue` not, at once (`refuse` gets it,
  // then the job is the caller's to release).
  template <typename Refuse>
  void arrive(uint32_t job_id, double now, Refuse refuse, bool may_queue = true) {
    ++arrivals_;
    if (rate_ > 0 && busy_ < slots_ && queue_.waiting() == 0) {
      change_in_system(+1, now);
      start_service(job_id, now);
      return;
    }
    jobs_[job_id].state = kQueued;
    if (!may_queue || (spec_.queue_limit > 0 && queue_.waiting() >= spec_.queue_limit)) {
      refuse(job_id);
      return;
    }
    queue_.push(job_id);
    change_in_system(+1, now);
    if (rate_ > 0 && busy_ < slots_) dispatch(now, refuse);  // else it would do nothing
  }

  // A completion event came up: the job it names leaves service, or nullptr
  // when the event is stale. Release the job afterwards, then dispatch.
  const Job* end_service(uint32_t job_id, uint32_t gen, double now) {
    Job& job = jobs_[job_id];
    if (job.gen != gen || job.state != kInService) return nullptr;
    Serving moved = in_service_.back();
    in_service_[job.slot] = moved;
    jobs_[moved.job].slot = job.slot;
    in_service_.pop_back();
    --busy_;
    change_in_system(-1, now);
    ++completed_;
    sojourn_sum_s_ += now - job.sent_s;
    return &job;
  }

  void release(uint32_t job_id) { free_job(jobs_, job_id); }

  // Fills idle slots from the queue. CoDel's drops go to `refuse`.
  template <typename Refuse>
  void dispatch(double now, Refuse refuse) {
    while (rate_ > 0 && busy_ < slots_ && queue_.waiting() > 0) {
      uint32_t job_id = queue_.next(now, [&](uint32_t dropped) {
        change_in_system(-1, now);  // CoDel drops at the head: the caller hears at once
        refuse(dropped);
      });
      if (job_id == kNone) return;
      start_service(job_id, now);
    }
  }

  // The caller's current attempt still waits in the queue (not in service).
  bool queued_for(uint32_t job_id, uint32_t caller, uint32_t caller_gen) {
    const Job& job = jobs_[job_id];
    return job.state == kQueued && job.caller == caller && job.caller_gen == caller_gen;
  }

  // The job still waits in the queue in the generation `gen` names.
  bool still_queued(uint32_t job_id, uint32_t gen) const {
    const Job& job = jobs_[job_id];
    return job.state == kQueued && job.gen == gen;
  }

  // Drops a queued job whose caller gave up (server.shed_abandoned).
  void shed(uint32_t job_id, double now);

  // The capacity factor changes (the incident starts or ends): jobs in
  // service keep the work done and finish at the new rate. Dispatch after.
  void set_rate(double rate, double now);

  // Closes the time-average at the horizon and adds the server's counts.
  void finish(double now, AgentStats& stats);

  // Jobs still at the server (queued or in service), in pool order.
  template <typename Visit>
  void for_each_in_flight(Visit visit) {
    for (uint32_t job_id = 0; job_id < jobs_.slots(); ++job_id) {
      const Job& job = jobs_[job_id];
      if (job.state == kQueued || job.state == kInService) visit(job_id, job);
    }
  }

 private:
  void change_in_system(int delta, double now) {
    area_in_system_ += static_cast<double>(in_system_) * (now - area_t_);
    area_t_ = now;
    in_system_ += delta;
  }

  double draw_service() {
    switch (spec_.service) {
      case ServiceDist::exponential:
        return rng_.exponential(mean_service_s_);
      case ServiceDist::lognormal:
        return std::exp(log_mu_ + sigma_ * rng_.normal());
      case ServiceDist::two_point:
        return mean_service_s_ * (rng_.uniform() < 0.5 ? 1 - sigma_ : 1 + sigma_);
      case ServiceDist::deterministic:
        break;
    }
    return mean_service_s_;
  }

  // Inlined into both callers: on the per-event path a call here costs ~5%.
  [[gnu::always_inline]] void start_service(uint32_t job_id, double now) {
    Job& job = jobs_[job_id];
    job.state = kInService;
    job.slot = static_cast<uint32_t>(in_service_.size());
    ++busy_;
    double work = draw_service();
    if (spec_.contention > 0) work *= 1 + spec_.contention * (in_system_ - 1);
    // Filled in place: a Serving built on the stack and copied was read back
    // before its three stores had landed (a stall on every service start).
    Serving& serving = in_service_.emplace_back();
    serving.job = job_id;
    serving.last_s = now;
    serving.work_left = work;
    wait_sum_s_ += now - job.sent_s;
    ++job.gen;
    events_.push(now + work / rate_, kComplete, {job_id, job.gen});
  }

  const ServerSpec& spec_;
  Pool<Job>& jobs_;
  std::vector<Serving>& in_service_;
  Events& events_;
  Rng& rng_;  // the engine's: one stream of draws, so a run is the same bytes
  std::vector<JobNote>* notes_ = nullptr;
  ServerQueue queue_;
  int slots_ = 1;
  int busy_ = 0;
  double rate_ = 1;  // capacity factor: work done per second of service
  double mean_service_s_ = 0, sigma_ = 0, log_mu_ = 0;
  long in_system_ = 0;
  double area_t_ = 0;
  // Counted here and added to AgentStats at the end (see AgentEngine::stats_).
  uint64_t arrivals_ = 0, completed_ = 0;
  double sojourn_sum_s_ = 0, wait_sum_s_ = 0, area_in_system_ = 0;
};

}  // namespace retrystorm::agent
