// A count with its noun: "1 retry", "2 retries". One rule for every message
// that counts something.
#pragma once

#include <string>
#include <string_view>

namespace retrystorm::text {

inline std::string plural(long long n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace retrystorm::text
