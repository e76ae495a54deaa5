#include "model/number_text.hpp"

#include <fmt/format.h>

namespace retrystorm {

std::string number_text(double v) {
  return fmt::format("{}", v);
}

}  // namespace retrystorm
