// The one table that names the per-bucket measurements of a session run
// (SessionBuckets): the JSON `series`, the CSV of `run --format csv` and the
// page's SessionSeriesName (web/src/types.ts) all walk kBucketFields, in
// its order.
#pragma once

#include <string_view>
#include <vector>

#include "engines/sessions/session_run.hpp"

namespace retrystorm::sessions {

struct BucketField {
  std::string_view name;
  const std::vector<double>& (*get)(const SessionBuckets&);
  const char* csv_format;  // {fmt} format of one CSV cell
};

template <auto member>
const std::vector<double>& bucket_column(const SessionBuckets& b) {
  return b.*member;
}
template <Occupancy state>
const std::vector<double>& occupancy_column(const SessionBuckets& b) {
  return b.occupancy[static_cast<size_t>(state)];
}

// Table: the order of the CSV columns.
inline constexpr BucketField kBucketFields[] = {
    {"t_s", &bucket_column<&SessionBuckets::t_s>, "{:.3f}"},
    {"working", &occupancy_column<Occupancy::working>, "{:.6g}"},
    {"blocked", &occupancy_column<Occupancy::blocked>, "{:.6g}"},
    {"asleep", &occupancy_column<Occupancy::asleep>, "{:.6g}"},
    {"launches", &bucket_column<&SessionBuckets::launches>, "{:g}"},
    {"completions", &bucket_column<&SessionBuckets::completions>, "{:g}"},
    {"failures", &bucket_column<&SessionBuckets::failures>, "{:g}"},
    {"errors_429", &bucket_column<&SessionBuckets::errors_429>, "{:g}"},
    {"errors_401", &bucket_column<&SessionBuckets::errors_401>, "{:g}"},
    {"items_done", &bucket_column<&SessionBuckets::items_done>, "{:g}"},
    {"arrivals", &bucket_column<&SessionBuckets::arrivals>, "{:g}"},
    {"queue_unread", &bucket_column<&SessionBuckets::queue_unread>, "{:g}"},
    {"peak_in_flight", &bucket_column<&SessionBuckets::peak_in_flight>, "{:g}"},
};

}  // namespace retrystorm::sessions
