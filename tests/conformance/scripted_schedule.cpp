#include "scripted_schedule.hpp"

#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace retrystorm::conformance {

using nlohmann::json;

int Answer::http_status() const {
  try {
    size_t used = 0;
    int code = std::stoi(status, &used);
    return used == status.size() ? code : 500;
  } catch (const std::exception&) {
    return 500;
  }
}

namespace {

Answer parse_answer(const json& j) {
  if (!j.is_object()) throw std::runtime_error("schedule: an answer must be an object");
  Answer a;
  a.raw = j;
  if (auto s = j.find("status"); s != j.end())
    a.status = s->is_number_integer() ? std::to_string(s->get<int>()) : s->get<std::string>();
  a.delay_ms = j.value("delay_ms", 0.0);
  a.hang = j.value("hang", false);
  if (auto h = j.find("headers"); h != j.end())
    for (const auto& [name, value] : h->items()) a.headers[name] = value.get<std::string>();
  a.body = j.value("body", std::string{});
  a.content_type = j.value("content_type", std::string{});
  return a;
}

}  // namespace

Schedule Schedule::parse(const json& doc) {
  if (!doc.is_object()) throw std::runtime_error("schedule: the document must be an object");
  Schedule s;
  std::string mode = doc.value("mode", std::string("per_request"));
  if (mode == "global")
    s.mode = Mode::global;
  else if (mode != "per_request")
    throw std::runtime_error("schedule: mode must be per_request or global, not " + mode);
  if (auto a = doc.find("answers"); a != doc.end())
    for (const auto& one : *a) s.answers.push_back(parse_answer(one));
  s.then =
      doc.contains("then") ? parse_answer(doc.at("then")) : parse_answer(json{{"status", 200}});
  return s;
}

Schedule Schedule::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("schedule: cannot read " + path);
  try {
    return parse(json::parse(in));
  } catch (const json::exception& e) {
    throw std::runtime_error("schedule: " + path + ": " + e.what());
  }
}

const Answer& Schedule::answer_for(int attempt, int arrival) const {
  int k = mode == Mode::global ? arrival : attempt;
  if (k >= 1 && static_cast<size_t>(k) <= answers.size()) return answers[k - 1];
  return then;
}

Recorder::Recorder(const Schedule& schedule, const std::string& record_path)
    : schedule_(schedule), out_(std::fopen(record_path.c_str(), "w")) {
  if (!out_) throw std::runtime_error("record: cannot write " + record_path);
}

Recorder::~Recorder() {
  // Attempts that never ended (none after a clean stop) do not hold back the rest.
  for (const auto& [arrival, text] : pending_) write_line(text);
  if (out_) std::fclose(out_);
}

double Recorder::now_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
      .count();
}

Ticket Recorder::begin(const Arrival& what) {
  std::lock_guard lock(mutex_);
  Ticket t;
  t.attempt = ++attempts_by_request_[what.request];
  t.arrival = ++arrivals_;
  t.t_ms = now_ms();
  t.what = what;
  t.answer = &schedule_.answer_for(t.attempt, t.arrival);
  return t;
}

void Recorder::end(const Ticket& t) {
  json line = {{"request", t.what.request},
               {"attempt", t.attempt},
               {"arrival", t.arrival},
               {"t_ms", t.t_ms},
               {"announced", t.what.announced ? json(*t.what.announced) : json(nullptr)},
               {"method", t.what.method},
               {"path", t.what.path},
               {"answer", t.answer->raw},
               {"end_ms", now_ms()}};
  std::lock_guard lock(mutex_);
  pending_[t.arrival] = line.dump() + "\n";
  // Lines go out in arrival order: a finished attempt waits for the earlier
  // arrivals that are still being answered (e.g. a hang).
  for (auto it = pending_.find(written_ + 1); it != pending_.end();
       it = pending_.find(written_ + 1)) {
    write_line(it->second);
    pending_.erase(it);
    ++written_;
  }
}

void Recorder::write_line(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

bool sleep_unless_stopped(double ms, const std::atomic<bool>& stop) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (stop.load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void announce_listening(int port) {
  std::cout << "listening " << port << "\n" << std::flush;
}

}  // namespace retrystorm::conformance
