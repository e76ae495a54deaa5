// What `run_lab` and the chain's run (lab_chain.cpp) share: the work
// directory, the backend's counts read back, a run read as the lab reports it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "lab/generator.hpp"
#include "lab/lab.hpp"
#include "lab/process.hpp"

namespace retrystorm::lab {

// A private directory for configs, logs and the backend's counts, removed
// when the run ends. It names its owner (owner.pid): a lab that was killed
// (SIGKILL, a crash) cannot remove its own, so each new lab removes those
// whose owner is gone.
class WorkDir {
 public:
  WorkDir() {
    remove_stale_work_dirs();
    std::string tmpl = (std::filesystem::temp_directory_path() / "retrystorm-lab-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a temporary directory");
    path_ = tmpl;
    std::ofstream(path_ + "/owner.pid") << ::getpid() << "\n";
  }
  ~WorkDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Starts `retrystorm lab-backend` with the server of `s` (its incident, its
// shedding) and `extra` arguments; its counts and stderr go to DIR/NAME.*.
// `port` (and over gRPC `grpc_port`) receive what it listens on.
ChildProcess start_backend(const LabOptions& o, const Scenario& s, long long t0,
                           const std::string& dir, int& port, int& grpc_port,
                           const std::string& name = "backend",
                           const std::vector<std::string>& extra = {});
// Fills the result's options and scaled scenario; returns what the
// measurement and the agent run are binned by (agent engine, step = bin).
Scenario start_result(const LabOptions& o, LabResult& r);
// The load generator from time zero, with the lab's progress line; an
// interrupt before it started gives empty bins, marked interrupted.
GeneratorResult run_users(const LabOptions& o, GeneratorOptions g);
// The users' requests and outcomes the generator counted, into the run.
void count_users(RunResult& r, const GeneratorResult& g);
// The backend's per-bin counts, written when it was stopped (stopped here).
nlohmann::json read_backend(ChildProcess& backend, const std::string& dir,
                            const std::string& file = "backend");
// Its metrics and verdict.
LabRun view(RunResult run);
// The backend's `key` figures (p50, p99, max); none when it has no such key.
TimingError timing_of(const nlohmann::json& b, const char* key);
// The backend's worst timer lateness per bin (none when it wrote none).
std::vector<double> backend_lateness(const nlohmann::json& b);
// Throws when a process a proxy started is left (after stopping it).
void check_no_strays();
// The lab's measurement with stalls of the machine left out of the goodput
// recovery (lab_run.cpp).
void discount_stalls(LabResult& r, const std::vector<double>& generator_late_s,
                     const std::vector<double>& backend_late_s);

}  // namespace retrystorm::lab
