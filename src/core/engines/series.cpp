#include "engines/series.hpp"

namespace retrystorm {

void Series::bind(size_t steps) {
  double* p = storage_.data();
  for (const SeriesField& field : kSeriesFields) {
    this->*field.member = std::span<double>(p, steps);
    p += steps;
  }
}

void Series::resize(size_t steps) {
  storage_.assign(kSeriesFields.size() * steps, 0.0);
  bind(steps);
}

Series& Series::operator=(const Series& other) {
  if (this != &other) {
    storage_ = other.storage_;
    bind(other.size());
  }
  return *this;
}

}  // namespace retrystorm
