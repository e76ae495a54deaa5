// The memory of runs, kept between them (docs/agent-engine.md, "Performance"):
// ladders, tipping points, sweeps and Monte Carlo make many short runs, and
// fresh pages cost more than the events. One process-wide shelf of a few
// workspaces, each kept only while small, so that a server whose many threads
// each served a large run once does not hold all that memory for good.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace retrystorm {

// `Workspace` is default-constructible and tells its size in entities
// (`entities()`: what it holds at its busiest moment's capacity).
template <typename Workspace>
class WorkspaceShelf {
 public:
  static constexpr size_t kKept = 8;  // about one per core that runs
  // Calls and jobs (at each run's busiest moment) that the kept workspaces may
  // hold in all, about 70 MB: two stuck runs of a million jobs each (the
  // page's band of partial-brownout, one per core) and a ladder's stuck rows
  // stay warm; a server's many threads cannot each keep one. At 2^20, one of
  // the band's two workspaces was freed and its pages faulted in again for
  // every run (the band took ~5-10% longer).
  static constexpr size_t kKeptEntities = size_t{1} << 21;

  // The workspace this thread gave back last, else the last given back, else a new one.
  std::unique_ptr<Workspace> take() {
    std::lock_guard lock(mutex_);
    if (kept_.empty()) return std::make_unique<Workspace>();
    size_t i = kept_.size() - 1;
    for (size_t k = kept_.size(); k-- > 0;)
      if (kept_[k].thread == std::this_thread::get_id()) {
        i = k;
        break;
      }
    std::unique_ptr<Workspace> w = std::move(kept_[i].workspace);
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
    kept_entities_ -= w->entities();
    return w;
  }
  void give_back(std::unique_ptr<Workspace> w) {
    size_t n = w->entities();
    std::lock_guard lock(mutex_);
    if (kept_.size() >= kKept || kept_entities_ + n > kKeptEntities) return;  // freed here
    kept_entities_ += n;
    kept_.push_back({std::move(w), std::this_thread::get_id()});
  }
  size_t kept() const {
    std::lock_guard lock(mutex_);
    return kept_.size();
  }

  static WorkspaceShelf& get() {
    static WorkspaceShelf shelf;
    return shelf;
  }

 private:
  // A workspace goes back to the thread that used it last. Its small parts
  // that every event writes (timer lanes, the pools' free lists) lie among
  // that thread's other memory; lent to another thread, they shared cache
  // lines with the first thread's next run, each core's writes took the
  // lines from the other, and a sweep on two threads took twice the CPU of
  // one (docs/agent-engine.md, "Two threads, a workspace each").
  struct Kept {
    std::unique_ptr<Workspace> workspace;
    std::thread::id thread;
  };
  mutable std::mutex mutex_;
  std::vector<Kept> kept_;
  size_t kept_entities_ = 0;
};

// Lends a workspace of the shelf to one run.
template <typename Workspace>
class WorkspaceLease {
 public:
  WorkspaceLease() : ws_(WorkspaceShelf<Workspace>::get().take()) {}
  ~WorkspaceLease() { WorkspaceShelf<Workspace>::get().give_back(std::move(ws_)); }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace& get() { return *ws_; }

 private:
  std::unique_ptr<Workspace> ws_;
};

}  // namespace retrystorm
