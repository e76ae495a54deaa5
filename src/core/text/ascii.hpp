// Letter case as configuration formats and protocols compare it: ASCII only
// (HTTP header names, INI option names, YAML booleans, host names), never
// the locale's.
#pragma once

#include <string>
#include <string_view>

namespace retrystorm::text {

inline std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace retrystorm::text
