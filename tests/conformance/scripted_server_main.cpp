// rs_scripted_server: answers HTTP or gRPC attempts from a schedule and records
// each one (docs/conformance.md). Prints `listening PORT` when ready; stops on
// SIGTERM/SIGINT or after --max-seconds.
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "scripted_schedule.hpp"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) {
  g_stop.store(true);
}

struct Options {
  std::string protocol = "http";
  std::string schedule;
  std::string record;
  int port = 0;
  double max_seconds = 120;
};

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    if (flag == "--protocol")
      o.protocol = value;
    else if (flag == "--schedule")
      o.schedule = value;
    else if (flag == "--record")
      o.record = value;
    else if (flag == "--port")
      o.port = std::stoi(value);
    else if (flag == "--max-seconds")
      o.max_seconds = std::stod(value);
    else
      return false;
  }
  return (o.protocol == "http" || o.protocol == "grpc") && !o.schedule.empty() && !o.record.empty();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace retrystorm::conformance;
  Options o;
  try {
    if (!parse_options(argc, argv, o)) throw std::invalid_argument("usage");
  } catch (const std::exception&) {
    std::cerr << "usage: rs_scripted_server --protocol http|grpc --schedule FILE --record FILE"
                 " [--port N] [--max-seconds S]\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a client gone while we answer is not fatal
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  try {
    Schedule schedule = Schedule::load(o.schedule);
    Recorder recorder(schedule, o.record);
    // Bounded life: a test that forgets to stop us does not leave us behind.
    std::thread deadline([&] {
      sleep_unless_stopped(o.max_seconds * 1000, g_stop);
      g_stop.store(true);
    });
    int rc = o.protocol == "http" ? serve_http(schedule, recorder, o.port, g_stop)
                                  : serve_grpc(schedule, recorder, o.port, g_stop);
    g_stop.store(true);
    deadline.join();
    return rc;
  } catch (const std::exception& e) {
    std::cerr << "rs_scripted_server: " << e.what() << "\n";
    return 1;
  }
}
