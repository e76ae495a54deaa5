// The Python module retrystorm._core: the application layer of the command
// line and the server, bound with pybind11 (docs/python.md). The package
// python/retrystorm wraps it in pandas and matplotlib.
#include <pybind11/stl.h>

#include <atomic>
#include <csignal>

#include "analysis/cost.hpp"
#include "bindings.hpp"
#include "model/keys.hpp"

namespace py = pybind11;

namespace retrystorm::python {

app::CostBudget python_budget(bool allow_large) {
  // Inside interruptible(), Ctrl-C's check, so that the checks between runs
  // (risk, splitting, ladders, sweeps of short runs) see it too. A copy, not
  // the scope's own: a pool's thread installs the budget's check as its scope.
  CancelCheck interrupt;
  if (const CancelCheck* current = CancelScope::current()) interrupt = *current;
  if (allow_large) return {large_cost_limits(), "", std::move(interrupt)};
  return {CostLimits{}, "; allow_large=True allows more", std::move(interrupt)};
}

namespace {

std::atomic<bool> interrupt_flag{false};
struct sigaction python_handler;  // Python's own, restored when the outermost scope ends
int depth = 0;                    // scopes open (under the GIL: no race)

void on_interrupt(int) {
  interrupt_flag.store(true);
}

bool python_handles_interrupts() {
  py::module_ threading = py::module_::import("threading");
  if (!threading.attr("current_thread")().is(threading.attr("main_thread")())) return false;
  py::module_ signal = py::module_::import("signal");
  return signal.attr("getsignal")(signal.attr("SIGINT")).is(signal.attr("default_int_handler"));
}

}  // namespace

InterruptScope::InterruptScope() {
  if (depth > 0 || !python_handles_interrupts()) return;
  interrupt_flag.store(false);
  struct sigaction ours {};
  ours.sa_handler = on_interrupt;
  sigemptyset(&ours.sa_mask);
  if (sigaction(SIGINT, &ours, &python_handler) != 0) return;
  installed_ = true;
  ++depth;
  check_ = [] { return interrupt_flag.load(std::memory_order_relaxed); };
}

InterruptScope::~InterruptScope() {
  finish();
}

bool InterruptScope::finish() {
  if (installed_) {
    sigaction(SIGINT, &python_handler, nullptr);
    installed_ = false;
    --depth;
    interrupted_ = interrupt_flag.load();
  }
  return interrupted_;
}

}  // namespace retrystorm::python

PYBIND11_MODULE(_core, m) {
  using namespace retrystorm::python;
  m.doc() = "retrystorm's C++ core (docs/python.md); use the package retrystorm";
  m.attr("__version__") = RETRYSTORM_VERSION;  // VERSION, as `retrystorm --version`
  // Bad input keeps the core's message, which names the key and the range.
  py::register_exception<retrystorm::InputError>(m, "InputError", PyExc_ValueError);
  bind_scenario(m);
  bind_run(m);
  bind_studies(m);
  bind_sweep(m);
}
