#include "parallel/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include "parallel/cancel.hpp"

namespace retrystorm {

namespace {

unsigned thread_count(unsigned asked, size_t total) {
  unsigned threads = asked ? asked : std::max(1u, std::thread::hardware_concurrency());
  return std::max(1u,
                  std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(total, 1))));
}

// What the workers share: the next item, the finished count, and how the
// work ended (stopped by the caller, or failed with the first error).
struct Shared {
  std::atomic<size_t> next{0}, done{0};
  std::atomic<unsigned> running{0};
  std::atomic<bool> halt{false}, stopped{false}, failed{false};
  std::exception_ptr error;  // written once, by the worker that set `failed`
};

void work_loop(Shared& shared, size_t total, const std::function<void(size_t)>& work,
               const PoolOptions& options, const CancelCheck* caller) {
  // The stop check, or else the calling thread's own (a request's deadline),
  // also stops a run that is under way on this worker.
  static const CancelCheck kNone;
  const CancelCheck& check = options.stop ? options.stop : caller ? *caller : kNone;  // no copy
  CancelScope scope(check);
  try {
    for (size_t i; !shared.halt && (i = shared.next.fetch_add(1)) < total; ++shared.done) {
      if (options.stop && options.stop()) {
        shared.stopped = true;
        shared.halt = true;
        break;
      }
      work(i);
    }
  } catch (...) {
    if (!shared.failed.exchange(true)) shared.error = std::current_exception();
    shared.halt = true;
  }
  --shared.running;
}

}  // namespace

bool for_each_index(size_t total, const std::function<void(size_t)>& work,
                    const PoolOptions& options) {
  unsigned threads = thread_count(options.threads, total);
  bool watch = options.progress && total > 1;
  Shared shared;
  shared.running = threads;
  const CancelCheck* caller = CancelScope::current();  // outlives the workers
  auto loop = [&] { work_loop(shared, total, work, options, caller); };
  std::vector<std::thread> pool;
  for (unsigned t = watch ? 0 : 1; t < threads; ++t) pool.emplace_back(loop);
  if (watch) {
    size_t reported = total + 1;  // nothing yet
    auto report = [&] {
      if (size_t done = shared.done.load(); done != reported)
        options.progress(reported = done, total);
    };
    while (shared.running.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      report();
    }
    report();  // the last count, once, even when the work took less than a tick
  } else {
    loop();
  }
  for (auto& t : pool) t.join();
  if (shared.error) std::rethrow_exception(shared.error);
  return !shared.stopped;
}

}  // namespace retrystorm
