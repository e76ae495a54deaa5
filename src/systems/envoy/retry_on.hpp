// Which error answers Envoy's router retries, from a route's retry_on list
// and its retriable_status_codes. Istio's sidecars are Envoy: its importer
// reads retryOn through the same table (docs/policies.md, "Which failures
// are retried").
#pragma once

#include <string>
#include <vector>

#include "model/scenario.hpp"

namespace retrystorm::configs::envoy {

// envoyproxy/envoy source/common/router/retry_state_impl.cc:
// wouldRetryFromHeaders retries a 503 on 5xx, gateway-error or a listed
// retriable status code and a 429 only as a listed code (never with
// x-envoy-ratelimited); wouldRetryFromReset retries every reset, a refused
// connection included, on 5xx and gateway-error, a refused connection on
// connect-failure; `reset` (Envoy 1.24+) retries every reset.
AnswerSet retried_answers(const std::string& retry_on, const std::vector<long long>& codes);

// Whether Envoy retries a per-try timeout: retry_on lists 5xx,
// gateway-error or reset (a timed-out attempt is one of each; Envoy's
// x-envoy-retry-on documentation).
bool retries_timeouts(const std::string& retry_on);

// The same in words for an import note: "503, refused, reset".
std::string answers_in_words(AnswerSet answers);

// The retry_on items that retry `answers` (and a timed-out attempt when
// `timeouts`), the inverse of retried_answers: a 429 as
// "retriable-status-codes" (the caller lists the code). What Envoy cannot
// single out is noted in `notes` (`as_set` names the scenario's setting).
std::vector<std::string> retry_on_items(AnswerSet answers, bool timeouts, const std::string& as_set,
                                        std::vector<std::string>& notes);

}  // namespace retrystorm::configs::envoy
