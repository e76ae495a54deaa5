#include "io/logs/requests_csv_writer.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

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

RequestsCsv::RequestsCsv(const std::string& path)
    : out_(path, std::ios::binary | std::ios::trunc), path_(path) {
  if (!out_) throw std::runtime_error("cannot write '" + path + "'");
  buffer_ = "request_id,attempt,sent_s,done_s,outcome,layer\n";
}

RequestsCsv::~RequestsCsv() {
  try {
    flush_buffer();
  } catch (...) {
  }
}

void RequestsCsv::row(const AttemptRow& r) {
  append_int(buffer_, r.request_id);
  buffer_ += ',';
  append_int(buffer_, static_cast<uint64_t>(r.attempt));
  buffer_ += ',';
  append_seconds(buffer_, r.sent_s);
  buffer_ += ',';
  append_seconds(buffer_, r.done_s);
  buffer_ += ',';
  buffer_ += r.outcome;
  buffer_ += ',';
  append_int(buffer_, static_cast<uint64_t>(r.layer));
  buffer_ += '\n';
  if (buffer_.size() >= (1u << 20)) flush_buffer();
}

void RequestsCsv::flush_buffer() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void RequestsCsv::close() {
  flush_buffer();
  out_.flush();
  if (!out_) throw std::runtime_error("writing '" + path_ + "' failed");
  out_.close();
}

}  // namespace retrystorm
