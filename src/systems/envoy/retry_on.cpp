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
  for (std::string_view item : text::list_items(retry_on)) {
    if (item == "5xx" || item == "gateway-error") out |= k503 | kRefused | kReset;
    if (item == "reset") out |= kRefused | kReset;
    if (item == "connect-failure") out |= kRefused;
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

}  // namespace retrystorm::configs::envoy
