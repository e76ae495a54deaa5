#include "systems/envoy/retry_on.hpp"

#include <algorithm>

#include "text/list.hpp"

namespace retrystorm::configs::envoy {

AnswerSet retried_answers(const std::string& retry_on, const std::vector<long long>& codes) {
  constexpr AnswerSet k503 = answer_bit(FailureClass::http_503);
  constexpr AnswerSet k429 = answer_bit(FailureClass::http_429);
  constexpr AnswerSet kRefused = answer_bit(FailureClass::refused);
  constexpr AnswerSet kReset = answer_bit(FailureClass::reset);
  AnswerSet out = 0;
  auto listed = [&](long long code) {
    return std::find(codes.begin(), codes.end(), code) != codes.end();
  };
  // gRPC conditions are answers of a gRPC route: counted when retry_on names
  // no HTTP answer condition (Istio's default lists both, for HTTP routes).
  bool http = false;
  for (std::string_view item : text::list_items(retry_on))
    http = http || item == "5xx" || item == "gateway-error" || item == "retriable-4xx" ||
           item == "retriable-status-codes";
  for (std::string_view item : text::list_items(retry_on)) {
    if (item == "5xx" || item == "gateway-error") out |= k503 | kRefused | kReset;
    if (item == "reset") out |= kRefused | kReset;
    // A refused connection, or a stream the upstream refused before reading
    // it; reset-before-request retries a reset before the request was sent
    // (wouldRetryFromReset, RETRY_ON_RESET_BEFORE_REQUEST).
    if (item == "connect-failure" || item == "refused-stream" || item == "reset-before-request")
      out |= kRefused;
    // x-envoy-retry-grpc-on values: a grpc-status in the upstream's answer
    // (wouldRetryFromHeaders): UNAVAILABLE is an overloaded server's answer,
    // RESOURCE_EXHAUSTED its throttling.
    if (item == "unavailable" && !http) out |= k503;
    if (item == "resource-exhausted" && !http) out |= k429;
    if (item == "retriable-status-codes") {
      if (listed(503)) out |= k503;
      if (listed(429)) out |= k429;
    }
  }
  return out;
}

bool retries_timeouts(const std::string& retry_on) {
  for (std::string_view item : text::list_items(retry_on))
    if (item == "5xx" || item == "gateway-error" || item == "reset") return true;
  return false;
}

std::string answers_in_words(AnswerSet answers) {
  return answers == 0 ? "none of 503, 429, refused, reset" : answer_list(answers, ", ");
}

std::vector<std::string> retry_on_items(AnswerSet answers, bool timeouts, const std::string& as_set,
                                        std::vector<std::string>& notes) {
  auto has = [&](FailureClass c) { return (answers & answer_bit(c)) != 0; };
  std::vector<std::string> items;
  if (has(FailureClass::http_503)) {
    items = {"5xx", "reset", "connect-failure", "refused-stream"};
    if (!has(FailureClass::refused) || !has(FailureClass::reset))
      notes.push_back(
          "Envoy's 5xx also retries refused connections and resets; the scenario's "
          "client.retry_on '" +
          as_set + "' leaves one of them out");
  } else {
    if (has(FailureClass::refused)) items = {"connect-failure", "refused-stream"};
    if (has(FailureClass::reset) || timeouts) {
      items.insert(items.begin(), "reset");
      if (!has(FailureClass::reset))
        notes.push_back(
            "Envoy retries a timed-out attempt only with 5xx, gateway-error or reset in "
            "retry_on: reset is written, which also retries resets");
    }
  }
  if (has(FailureClass::http_429)) items.push_back("retriable-status-codes");
  return items;
}

}  // namespace retrystorm::configs::envoy
