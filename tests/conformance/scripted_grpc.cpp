// The scripted server's gRPC side: answers every method (grpc++'s generic
// async API, no generated code) from the Schedule: a status code by name, a
// delay, a hang (until the client cancels or the server stops) and trailing
// metadata. One completion-queue thread drives every call; timers are
// grpc::Alarm tags on the same queue, so no call state is shared across threads.
#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <list>
#include <map>
#include <memory>

#include "scripted_schedule.hpp"

namespace retrystorm::conformance {

namespace {

// "UNAVAILABLE" or "14" as a gRPC code; an HTTP-looking "200" (the schedule's
// default `then`) is OK, anything unknown is UNKNOWN.
grpc::StatusCode status_code(const std::string& name) {
  static const std::map<std::string, grpc::StatusCode> kByName = {
      {"OK", grpc::OK},
      {"CANCELLED", grpc::CANCELLED},
      {"UNKNOWN", grpc::UNKNOWN},
      {"INVALID_ARGUMENT", grpc::INVALID_ARGUMENT},
      {"DEADLINE_EXCEEDED", grpc::DEADLINE_EXCEEDED},
      {"NOT_FOUND", grpc::NOT_FOUND},
      {"ALREADY_EXISTS", grpc::ALREADY_EXISTS},
      {"PERMISSION_DENIED", grpc::PERMISSION_DENIED},
      {"RESOURCE_EXHAUSTED", grpc::RESOURCE_EXHAUSTED},
      {"FAILED_PRECONDITION", grpc::FAILED_PRECONDITION},
      {"ABORTED", grpc::ABORTED},
      {"OUT_OF_RANGE", grpc::OUT_OF_RANGE},
      {"UNIMPLEMENTED", grpc::UNIMPLEMENTED},
      {"INTERNAL", grpc::INTERNAL},
      {"UNAVAILABLE", grpc::UNAVAILABLE},
      {"DATA_LOSS", grpc::DATA_LOSS},
      {"UNAUTHENTICATED", grpc::UNAUTHENTICATED}};
  if (auto it = kByName.find(name); it != kByName.end()) return it->second;
  if (name == "200") return grpc::OK;
  if (!name.empty() && name.size() <= 2 && name.find_first_not_of("0123456789") == name.npos &&
      std::stoi(name) <= 16)
    return static_cast<grpc::StatusCode>(std::stoi(name));
  return grpc::UNKNOWN;
}

std::string metadata_value(const grpc::GenericServerContext& ctx, const std::string& key) {
  auto it = ctx.client_metadata().find(key);
  if (it == ctx.client_metadata().end()) return {};
  return std::string(it->second.data(), it->second.size());
}

class Call;

// What a completion-queue tag stands for.
enum class Event { accepted, timer, sent, done };
struct Tag {
  Call* call;
  Event event;
};

// One incoming call, from RequestCall to its last tag. `pending` counts the
// tags still owed by the queue; the call is freed when it reaches 0.
class Call {
 public:
  explicit Call(Recorder& recorder) : recorder_(recorder) {}

  void request(grpc::AsyncGenericService& service, grpc::ServerCompletionQueue& cq) {
    ctx_.AsyncNotifyWhenDone(&done_tag_);
    ++pending_;  // accepted
    service.RequestCall(&ctx_, &stream_, &cq, &cq, &accepted_tag_);
  }

  // Returns true when this call has just been accepted (a new one should be
  // requested). `draining`: the queue is shut down, no operation may start.
  bool on(Event e, bool ok, grpc::ServerCompletionQueue& cq, bool draining) {
    --pending_;
    switch (e) {
      case Event::accepted:
        if (!ok) return false;  // the server is shutting down: never started, no done tag
        ++pending_;             // done: delivered for every started call
        start(cq, draining);
        return true;
      case Event::timer:
        if (ok && !done_ && !draining) finish();
        break;
      case Event::sent:
        break;
      case Event::done:
        done_ = true;
        record_end();  // the client went away (or the answer went out just before)
        if (timer_set_) alarm_.Cancel();
        if (!finished_ && !draining) finish();  // release a hang; completes with ok=false
        break;
    }
    return false;
  }
  bool finished_with() const { return pending_ == 0; }

 private:
  void start(grpc::ServerCompletionQueue& cq, bool draining) {
    Arrival a;
    std::string id = metadata_value(ctx_, "x-rs-request");
    if (!id.empty()) a.request = id;
    auto prev = ctx_.client_metadata().find("grpc-previous-rpc-attempts");
    if (prev != ctx_.client_metadata().end())
      a.announced = std::string(prev->second.data(), prev->second.size());
    a.method = "POST";
    a.path = ctx_.method();
    ticket_ = recorder_.begin(a);
    const Answer& answer = *ticket_.answer;
    if (answer.hang || draining) return;  // ended only by the done tag
    if (answer.delay_ms > 0) {
      timer_set_ = true;
      ++pending_;
      auto at = std::chrono::system_clock::now() +
                std::chrono::microseconds(static_cast<long>(answer.delay_ms * 1000));
      alarm_.Set(&cq, at, &timer_tag_);
      return;
    }
    finish();
  }

  void finish() {
    finished_ = true;
    const Answer& answer = *ticket_.answer;
    for (const auto& [name, value] : answer.headers) ctx_.AddTrailingMetadata(name, value);
    grpc::StatusCode code = status_code(answer.status);
    ++pending_;
    if (code == grpc::OK) {
      grpc::Slice empty("");
      grpc::ByteBuffer reply(&empty, 1);
      stream_.WriteAndFinish(reply, grpc::WriteOptions(), grpc::Status::OK, &sent_tag_);
    } else {
      stream_.Finish(grpc::Status(code, "scripted " + answer.status), &sent_tag_);
    }
    record_end();
  }

  void record_end() {
    if (recorded_) return;
    recorded_ = true;
    recorder_.end(ticket_);
  }

  Recorder& recorder_;
  grpc::GenericServerContext ctx_;
  grpc::GenericServerAsyncReaderWriter stream_{&ctx_};
  grpc::Alarm alarm_;
  Ticket ticket_;
  int pending_ = 0;
  bool timer_set_ = false, finished_ = false, done_ = false, recorded_ = false;
  Tag accepted_tag_{this, Event::accepted}, timer_tag_{this, Event::timer},
      sent_tag_{this, Event::sent}, done_tag_{this, Event::done};
};

// Calls waiting for a client at once: a burst of concurrent calls is matched
// without waiting for the loop to re-arm.
constexpr int kWaitingCalls = 16;

}  // namespace

int serve_grpc(const Schedule& schedule, Recorder& recorder, int port, std::atomic<bool>& stop) {
  (void)schedule;  // the recorder picks each answer from it
  grpc::AsyncGenericService service;
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(),
                           &bound);
  builder.RegisterAsyncGenericService(&service);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0) return 1;

  std::list<std::unique_ptr<Call>> calls;
  auto request_one = [&] {
    calls.push_back(std::make_unique<Call>(recorder));
    calls.back()->request(service, *cq);
  };
  for (int i = 0; i < kWaitingCalls; ++i) request_one();
  announce_listening(bound);

  auto handle = [&](void* raw, bool ok, bool accepting) {
    auto* tag = static_cast<Tag*>(raw);
    if (tag->call->on(tag->event, ok, *cq, !accepting) && accepting) request_one();
    if (tag->call->finished_with())
      calls.remove_if([&](const auto& c) { return c.get() == tag->call; });
  };
  while (!stop.load()) {
    void* raw = nullptr;
    bool ok = false;
    auto poll = std::chrono::system_clock::now() + std::chrono::milliseconds(50);
    auto status = cq->AsyncNext(&raw, &ok, poll);
    if (status == grpc::CompletionQueue::SHUTDOWN) break;
    if (status == grpc::CompletionQueue::GOT_EVENT) handle(raw, ok, true);
  }
  // Stop: cancel what is in flight (hangs are released), then drain every tag.
  server->Shutdown(std::chrono::system_clock::now());
  cq->Shutdown();
  void* raw = nullptr;
  bool ok = false;
  while (cq->Next(&raw, &ok)) handle(raw, ok, false);
  return 0;
}

}  // namespace retrystorm::conformance
