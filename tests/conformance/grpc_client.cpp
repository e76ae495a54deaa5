// rs_grpc_client: a real gRPC C-core client (grpc++ GenericStub, no generated
// code) that sends N unary calls through a channel configured by a service
// config (retryPolicy, retryThrottling), so the conformance tests see what
// C-core's retry filter really does (docs/conformance.md, "gRPC").
// Prints one JSON line per call: {"call", "request", "status", "code",
// "start_ms", "elapsed_ms"}, in completion order.
#include <grpc/grpc.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/validate_service_config.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string target;
  std::string service_config;  // the JSON text
  std::string method = "/rs.Scripted/Call";
  std::string id_prefix = "r";
  int calls = 1;
  int concurrency = 1;
  double deadline_ms = 0;  // 0: no deadline
  double gap_ms = 0;       // pause between sequential calls
  bool hedging_arg = false;
};

const char* kUsage =
    "usage: rs_grpc_client --target HOST:PORT (--service-config FILE | --service-config-json "
    "TEXT)\n  [--calls N] [--concurrency C] [--deadline-ms D] [--gap-ms G] [--method "
    "/pkg.Svc/M]\n  [--id-prefix P] [--enable-hedging-arg]\n";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--enable-hedging-arg") {
      o.hedging_arg = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    std::string v = argv[++i];
    if (flag == "--target")
      o.target = v;
    else if (flag == "--service-config")
      o.service_config = read_file(v);
    else if (flag == "--service-config-json")
      o.service_config = v;
    else if (flag == "--method")
      o.method = v;
    else if (flag == "--id-prefix")
      o.id_prefix = v;
    else if (flag == "--calls")
      o.calls = std::stoi(v);
    else if (flag == "--concurrency")
      o.concurrency = std::stoi(v);
    else if (flag == "--deadline-ms")
      o.deadline_ms = std::stod(v);
    else if (flag == "--gap-ms")
      o.gap_ms = std::stod(v);
    else
      throw std::invalid_argument("unknown option " + flag);
  }
  if (o.target.empty() || o.calls < 1 || o.concurrency < 1)
    throw std::invalid_argument("--target and positive --calls/--concurrency are needed");
  return o;
}

std::shared_ptr<grpc::Channel> make_channel(const Options& o) {
  grpc::ChannelArguments args;
  if (!o.service_config.empty()) args.SetServiceConfigJSON(o.service_config);
  // 1.51 has retries on by default; set it anyway so the test does not depend on it.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  // C-core 1.51 parses retryPolicy.perAttemptRecvTimeout only with this
  // experimental argument (retry_service_config.cc); tests try both ways.
  if (o.hedging_arg) args.SetInt("grpc.experimental.enable_hedging", 1);
  // "ipv4:" skips the DNS resolver: no resolver-provided service config.
  std::string target = o.target.find(':') != o.target.rfind(':') || o.target.rfind("ipv4:", 0) == 0
                           ? o.target
                           : "ipv4:" + o.target;
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

// One call in flight.
struct Call {
  int index = 0;
  std::string id;
  grpc::ClientContext ctx;
  grpc::ByteBuffer reply;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> rpc;
  Clock::time_point start;
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string code_name(grpc::StatusCode c) {
  static const char* kNames[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  int i = static_cast<int>(c);
  return i >= 0 && i <= 16 ? kNames[i] : std::to_string(i);
}

std::unique_ptr<Call> start_call(grpc::GenericStub& stub, grpc::CompletionQueue& cq,
                                 const Options& o, int index) {
  auto call = std::make_unique<Call>();
  call->index = index;
  call->id = o.id_prefix + "-" + std::to_string(index);
  call->ctx.AddMetadata("x-rs-request", call->id);
  call->start = Clock::now();
  if (o.deadline_ms > 0)
    call->ctx.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::microseconds(static_cast<long>(o.deadline_ms * 1000)));
  grpc::Slice body("x");
  grpc::ByteBuffer request(&body, 1);
  call->rpc = stub.PrepareUnaryCall(&call->ctx, o.method, request, &cq);
  call->rpc->StartCall();
  call->rpc->Finish(&call->reply, &call->status, call.get());
  return call;
}

void print_result(const Call& c, Clock::time_point t0, Clock::time_point end) {
  nlohmann::json line = {{"call", c.index},
                         {"request", c.id},
                         {"status", code_name(c.status.error_code())},
                         {"code", static_cast<int>(c.status.error_code())},
                         {"message", c.status.error_message()},
                         {"start_ms", ms_between(t0, c.start)},
                         {"elapsed_ms", ms_between(c.start, end)}};
  std::cout << line.dump() << "\n" << std::flush;
}

int run(const Options& o) {
  auto channel = make_channel(o);
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  Clock::time_point t0 = Clock::now();
  int next = 1, in_flight = 0;
  auto launch = [&] {
    start_call(stub, cq, o, next++).release();  // owned by the queue until it completes
    ++in_flight;
  };
  while (next <= o.calls && in_flight < o.concurrency) launch();
  void* tag = nullptr;
  bool ok = false;
  while (in_flight > 0 && cq.Next(&tag, &ok)) {
    std::unique_ptr<Call> done(static_cast<Call*>(tag));
    print_result(*done, t0, Clock::now());
    --in_flight;
    if (next <= o.calls) {
      if (o.gap_ms > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(o.gap_ms * 1000)));
      launch();
    }
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "rs_grpc_client: " << e.what() << "\n" << kUsage;
    return 2;
  }
  // An invalid service config makes C-core fail every call with UNAVAILABLE;
  // say so up front instead (exit 3: the config was refused).
  if (!o.service_config.empty()) {
    std::string error = grpc::experimental::ValidateServiceConfigJSON(o.service_config);
    if (!error.empty()) {
      std::cerr << "rs_grpc_client: service config refused by gRPC: " << error << "\n";
      return 3;
    }
  }
  return run(o);
}
