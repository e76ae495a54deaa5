#include "engines/sessions/clock.hpp"

#include "model/keys.hpp"

namespace retrystorm::sessions {

double parse_clock(const std::string& text, const std::string& key) {
  if (auto t = text::parse_clock(text)) return *t;
  throw InputError(key + ": '" + text +
                   "' is not a time; write seconds or [Nd]HH:MM[:SS], like 1d09:40");
}

}  // namespace retrystorm::sessions
