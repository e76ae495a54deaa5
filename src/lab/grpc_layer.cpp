#include "lab/grpc_layer.hpp"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/validate_service_config.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "lab/clock.hpp"

namespace retrystorm::lab {

namespace asio = boost::asio;

namespace {

std::string metadata(const grpc::GenericCallbackServerContext& ctx, const std::string& key) {
  auto it = ctx.client_metadata().find(key);
  return it == ctx.client_metadata().end() ? std::string()
                                           : std::string(it->second.data(), it->second.size());
}

}  // namespace

// One incoming call (grpc++'s callback API). gRPC threads construct it and
// call OnCancel/OnDone; everything else happens on the Asio thread through
// the shared GrpcAttempt. Finish may be called from any thread, also before
// the reactor is bound to its call (grpcpp/support/server_callback.h,
// ServerBidiReactor::Finish keeps it in `backlog_` under `stream_mu_`).
class GrpcReactor : public grpc::ServerGenericBidiReactor {
 public:
  GrpcReactor(grpc::GenericCallbackServerContext* ctx, asio::io_context& io,
              const std::function<void(GrpcAttemptPtr)>& on_attempt,
              const std::function<void(GrpcAttemptPtr)>& on_cancel)
      : io_(io), ctx_(ctx), on_cancel_(on_cancel), attempt_(std::make_shared<GrpcAttempt>()) {
    attempt_->reactor_ = this;
    attempt_->arrived = std::chrono::steady_clock::now();
    attempt_->transit_s = seconds_since_stamp(metadata(*ctx, "x-rs-sent-unix-us"));
    attempt_->retry = ctx->client_metadata().count("grpc-previous-rpc-attempts") > 0;
    attempt_->request_id = metadata(*ctx, "x-rs-request");
    attempt_->timeout_ms = std::atof(metadata(*ctx, "x-rs-timeout-ms").c_str());
    // The call's deadline as the client sent it (grpc-timeout); a call
    // without one has the infinite future here.
    double left =
        std::chrono::duration<double>(ctx->deadline() - std::chrono::system_clock::now()).count();
    attempt_->deadline_in_s = left < 1e6 ? std::max(0.0, left) : 0;
    asio::post(io_, [a = attempt_, on_attempt] { on_attempt(a); });
  }
  // The caller gave up on this attempt: answered at once on the Asio thread.
  // Stamped here, on gRPC's thread, as the arrival is.
  void OnCancel() override {
    asio::post(io_, [a = attempt_, at = std::chrono::steady_clock::now(), &f = on_cancel_] {
      if (a->answered()) return;
      a->cancelled = true;
      a->cancelled_at = at;
      f(a);
      a->answer(kGrpcDeadlineExceeded);
    });
  }
  void OnDone() override { delete this; }
  void finish(int code) {
    ctx_->AddTrailingMetadata(kAnsweredHeader, unix_us_stamp());
    if (code == kGrpcOk) {
      grpc::Slice body("ok");
      reply_ = grpc::ByteBuffer(&body, 1);
      StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
    } else {
      Finish(grpc::Status(static_cast<grpc::StatusCode>(code), "lab backend"));
    }
  }

 private:
  asio::io_context& io_;
  grpc::GenericCallbackServerContext* ctx_;
  const std::function<void(GrpcAttemptPtr)>& on_cancel_;  // the listener's
  GrpcAttemptPtr attempt_;
  grpc::ByteBuffer reply_;
};

void GrpcAttempt::answer(int code) {
  if (!reactor_) return;
  GrpcReactor* r = reactor_;
  reactor_ = nullptr;  // OnDone may delete it as soon as Finish is called
  r->finish(code);
}

namespace {

// After close(): answered UNAVAILABLE at once (grpcpp's own default reactor
// finishes in its constructor the same way).
class ClosedReactor : public grpc::ServerGenericBidiReactor {
 public:
  ClosedReactor() { Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lab backend stopping")); }
  void OnDone() override { delete this; }
};

}  // namespace

struct GrpcListener::Service : grpc::CallbackGenericService {
  Service(asio::io_context& io, std::function<void(GrpcAttemptPtr)> f,
          std::function<void(GrpcAttemptPtr)> c)
      : io(io), on_attempt(std::move(f)), on_cancel(std::move(c)) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    if (closed.load()) return new ClosedReactor();
    return new GrpcReactor(ctx, io, on_attempt, on_cancel);
  }
  asio::io_context& io;
  std::function<void(GrpcAttemptPtr)> on_attempt, on_cancel;
  std::atomic<bool> closed{false};
};

void GrpcListener::close() {
  service_->closed.store(true);
}

GrpcListener::GrpcListener(asio::io_context& io, std::function<void(GrpcAttemptPtr)> on_attempt,
                           std::function<void(GrpcAttemptPtr)> on_cancel)
    : service_(std::make_unique<Service>(io, std::move(on_attempt), std::move(on_cancel))) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  builder.RegisterCallbackGenericService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0)
    throw std::runtime_error("the lab backend's gRPC server did not start");
}

GrpcListener::~GrpcListener() {
  shutdown();
}

void GrpcListener::shutdown() {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server_.reset();
}

GrpcCaller::GrpcCaller(asio::io_context& io, int port, const std::string& service_config)
    : sink_(std::make_shared<Sink>()) {
  sink_->io = &io;
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(service_config);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  // C-core 1.51 reads retryPolicy.perAttemptRecvTimeout only on channels with
  // this experimental argument (src/core/ext/filters/client_channel/
  // retry_service_config.cc, RetryServiceConfigParser::ParsePerMethodParams;
  // later releases still gate it in RetryMethodConfig::JsonLoader). Without
  // it an attempt runs to the call's deadline and is never retried on a
  // timeout (docs/conformance.md; lint rule per-attempt-timeout-c-core-only).
  args.SetInt(GRPC_ARG_EXPERIMENTAL_ENABLE_HEDGING, 1);
  // "ipv4:" skips the DNS resolver, so no resolver-provided service config.
  channel_ = grpc::CreateCustomChannel("ipv4:127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials(), args);
  stub_ = std::make_unique<grpc::GenericStub>(channel_);
}

bool GrpcCaller::connect(std::chrono::system_clock::time_point deadline) {
  return channel_->WaitForConnected(deadline);
}

// What one call owns until it has completed and the loop has heard of it.
// Freed on the loop's thread, never inside gRPC's callback, so the last
// reference to the channel never goes on one of the channel's own threads.
struct GrpcCaller::CallState {
  grpc::ClientContext context;
  grpc::ByteBuffer request, reply;
  std::function<void(int, double)> done;
};

namespace {

// Seconds from the backend's answer to its arrival here; NaN without the stamp.
double answer_transit_s(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kAnsweredHeader);
  if (it == trailers.end()) return std::nan("");
  return seconds_since_stamp(std::string_view(it->second.data(), it->second.size()));
}

}  // namespace

void GrpcCaller::call(const std::string& request_id, long long timeout_ms,
                      std::chrono::system_clock::time_point deadline,
                      std::function<void(int, double)> done) {
  uint64_t key = next_key_++;
  auto& state = *calls_.emplace(key, std::make_unique<CallState>()).first->second;
  state.done = std::move(done);
  state.context.AddMetadata("x-rs-request", request_id);
  state.context.AddMetadata("x-rs-timeout-ms", std::to_string(timeout_ms));
  state.context.AddMetadata("x-rs-sent-unix-us", unix_us_stamp());
  state.context.set_deadline(deadline);
  grpc::Slice body("x");
  state.request = grpc::ByteBuffer(&body, 1);
  static const std::string method = kGrpcMethod;
  stub_->UnaryCall(&state.context, method, grpc::StubOptions(), &state.request, &state.reply,
                   [this, sink = sink_, key, &state](grpc::Status s) {
                     int code = static_cast<int>(s.error_code());
                     double back = answer_transit_s(state.context);
                     std::lock_guard<std::mutex> lock(sink->mutex);
                     sink->completed.insert(key);
                     if (sink->io)
                       asio::post(*sink->io,
                                  [this, key, code, back] { complete(key, code, back); });
                     sink->changed.notify_all();
                   });
}

// On the loop's thread, which runs only while this caller lives.
void GrpcCaller::complete(uint64_t key, int code, double answer_transit_s) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  std::unique_ptr<CallState> state = std::move(it->second);
  calls_.erase(it);
  {
    std::lock_guard<std::mutex> lock(sink_->mutex);
    sink_->completed.erase(key);
  }
  state->done(code, answer_transit_s);
}

// The run is over: calls still open are cancelled and waited for (a second
// at most) before their contexts go; one that does not end is left alone.
GrpcCaller::~GrpcCaller() {
  {
    std::lock_guard<std::mutex> lock(sink_->mutex);
    sink_->io = nullptr;
  }
  for (auto& [key, state] : calls_) state->context.TryCancel();  // may complete inline
  std::unique_lock<std::mutex> lock(sink_->mutex);
  sink_->changed.wait_for(lock, std::chrono::seconds(1), [&] {
    for (auto& [key, state] : calls_)
      if (!sink_->completed.count(key)) return false;
    return true;
  });
  for (auto& [key, state] : calls_)
    if (!sink_->completed.count(key)) state.release();  // still open: never freed under it
  lock.unlock();
  calls_.clear();
}

std::string grpc_config_error(const std::string& service_config) {
  return grpc::experimental::ValidateServiceConfigJSON(service_config);
}

}  // namespace retrystorm::lab
