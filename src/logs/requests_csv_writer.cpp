#include "logs/requests_csv_writer.hpp"

#include <charconv>
#include <cmath>

namespace retrystorm {

namespace {
void append_seconds(std::string& out, double v) {
  if (std::isnan(v)) return;  // empty: never answered
  char buf[64];
  auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 3).ptr;
  out.append(buf, end);
}
void append_int(std::string& out, uint64_t v) {
  char buf[32];
  auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}
}  // namespace

RequestsCsv::RequestsCsv(const std::string& path, const std::string& option, bool graph)
    : file_(path, option), buffer_(request_log::requests_csv_header(graph)), graph_(graph) {}

// The columns in request_log::Column order.
void RequestsCsv::row(const AttemptRow& r) {
  append_int(buffer_, r.request_id);
  buffer_ += ',';
  append_int(buffer_, static_cast<uint64_t>(r.attempt));
  buffer_ += ',';
  append_seconds(buffer_, r.sent_s);
  buffer_ += ',';
  append_seconds(buffer_, r.done_s);
  buffer_ += ',';
  buffer_ += request_log::outcome_name(r.outcome);
  buffer_ += ',';
  append_int(buffer_, static_cast<uint64_t>(r.layer));
  if (graph_) {
    buffer_ += ',';
    append_int(buffer_, static_cast<uint64_t>(r.call));
  }
  buffer_ += '\n';
  if (buffer_.size() >= (1u << 20)) {
    file_.write(buffer_);
    buffer_.clear();
  }
}

void RequestsCsv::close() {
  file_.write(buffer_);
  buffer_.clear();
  file_.commit();
}

}  // namespace retrystorm
