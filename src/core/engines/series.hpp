// The per-step series of a run, and the one table that names them: binding,
// the JSON answer, the CSV and the page's SeriesName (web/src/types.ts) all
// walk kSeriesFields, in its order.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace retrystorm {

// Amounts per step (not per second), as docs/cli.md ("series") lists them.
// All series share one allocation: a run allocates (and frees) one block,
// which keeps short runs cheap.
struct Series {
  std::span<double> t_s;
  std::span<double> capacity;
  std::span<double> first_attempts;
  std::span<double> retries;        // retries sent (passed the budget)
  std::span<double> goodput;        // served on time
  std::span<double> served_late;    // served after the caller gave up
  std::span<double> failed;         // user requests that failed in this step
  std::span<double> shed;           // given-up attempts dropped from the queue
  std::span<double> rejected;       // attempts refused by a full queue
  std::span<double> backlog;        // queued at the end of the step
  std::span<double> gave_up;        // attempts given up by their client
  std::span<double> budget_denied;  // retries the budget did not allow
  // attempts a client-side defense (breaker, throttle) refused before
  // sending; counted in first_attempts or retries as well
  std::span<double> refused_locally;
  // attempts waiting at their client for a connection at the end of the
  // step (client.max_connections); counted in first_attempts or retries
  // when they arrived, not yet sent
  std::span<double> pooled;

  Series() = default;
  Series(const Series& other) { *this = other; }
  Series& operator=(const Series& other);
  Series(Series&&) = default;  // moving the storage keeps the spans valid
  Series& operator=(Series&&) = default;

  void resize(size_t steps);  // every series zero
  size_t size() const { return t_s.size(); }

 private:
  void bind(size_t steps);
  std::vector<double> storage_;
};

// Attempts that left the clients in step i: first attempts and retries,
// less those a client-side defense refused before sending.
inline double attempts_sent(const Series& x, size_t i) {
  return x.first_attempts[i] + x.retries[i] - x.refused_locally[i];
}

// One series: its name (JSON key, CSV column, page) and where it lives.
struct SeriesField {
  std::string_view name;
  std::span<double> Series::*member;
};

// The order of the CSV columns and of the storage block.
inline constexpr std::array<SeriesField, 14> kSeriesFields = {{
    {"t_s", &Series::t_s},
    {"capacity", &Series::capacity},
    {"first_attempts", &Series::first_attempts},
    {"retries", &Series::retries},
    {"goodput", &Series::goodput},
    {"served_late", &Series::served_late},
    {"failed", &Series::failed},
    {"shed", &Series::shed},
    {"rejected", &Series::rejected},
    {"backlog", &Series::backlog},
    {"gave_up", &Series::gave_up},
    {"budget_denied", &Series::budget_denied},
    {"refused_locally", &Series::refused_locally},
    {"pooled", &Series::pooled},
}};

}  // namespace retrystorm
