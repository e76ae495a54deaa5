// Text and CSV views for the terminal: the run report with its chart, the
// ladder, the tipping point, series and sweep CSV.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/result_json.hpp"

namespace retrystorm {

std::string run_text(const RunReport& r);
// A chart of offered load, capacity and goodput per second, `width` columns.
std::string terminal_chart(const RunResult& run, int width = 72, int height = 12);
std::string ladder_text(const Scenario& s, const std::vector<LadderResult>& rows);
std::string tipping_text(const Scenario& s, const TippingResult& t);
std::string presets_text();
// The scenario keys as a Markdown table (docs/scenario-keys.md is this output).
std::string keys_markdown();
std::string series_csv(const Series& s);
// A graph's series in long form, one row per step and service (t_s, service,
// then the per-service fields) or per step and call (t_s, call, from, to,
// then the per-edge fields): docs/graph.md, "Results".
std::string graph_services_csv(const RunResult& run);
std::string graph_calls_csv(const RunResult& run);
std::string sweep_csv(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows);
// The figures (metric_field names) a sweep's CSV lists after the varied keys.
std::span<const std::string_view> sweep_csv_figures();
// The table of Monte Carlo summaries that `run --runs N` prints.
std::string summaries_text(int runs, double seed, const Summaries& metrics);
std::string montecarlo_text(const MonteCarloResult& r);

}  // namespace retrystorm
