// The agent engine's server: the rare paths (docs/agent-engine.md).
#include "engines/agent/server.hpp"

#include <algorithm>

namespace retrystorm::agent {

Server::Server(const ServerSpec& spec, ServerMemory& memory, Pool<Job>& jobs, Events& events,
               Rng& rng)
    : spec_(spec),
      jobs_(jobs),
      in_service_(memory.in_service),
      events_(events),
      rng_(rng),
      queue_(spec, memory.queue, jobs) {
  slots_ = spec.slots > 0 ? spec.slots : 1;
  mean_service_s_ = slots_ / spec.capacity_per_s;  // each slot serves capacity / slots
  sigma_ = spec.service_sigma;
  if (spec.service == ServiceDist::two_point) sigma_ = std::min(1.0, sigma_);
  log_mu_ = std::log(mean_service_s_) - sigma_ * sigma_ / 2;  // the lognormal's mean is the mean
}

void Server::shed(uint32_t job_id, double now) {
  change_in_system(-1, now);
  queue_.shed(job_id);
}

void Server::set_rate(double rate, double now) {
  for (Serving& serving : in_service_) {
    Job& job = jobs_[serving.job];
    serving.work_left = std::max(0.0, serving.work_left - (now - serving.last_s) * rate_);
    serving.last_s = now;
    ++job.gen;  // the completion scheduled at the old rate is stale
    if (rate > 0) events_.push(now + serving.work_left / rate, kComplete, {serving.job, job.gen});
  }
  rate_ = rate;
}

void Server::finish(double now, AgentStats& stats) {
  change_in_system(0, now);
  stats.server_arrivals += arrivals_;
  stats.completed += completed_;
  stats.sojourn_sum_s += sojourn_sum_s_;
  stats.wait_sum_s += wait_sum_s_;
  stats.area_in_system += area_in_system_;
  stats.peak_jobs = jobs_.peak();
}

}  // namespace retrystorm::agent
