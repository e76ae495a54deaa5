// The three views of an incident analysis (core/analysis/incident/report.hpp):
// text for the terminal, JSON, and one self-contained HTML file whose charts
// are drawn by the page's own chart code (web/src/report), embedded at build
// time. The command is `retrystorm analyze`; see docs/analyze.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/incident/report.hpp"

namespace retrystorm {

std::string analyze_text(const incident::Report& r);
nlohmann::json analyze_json(const incident::Report& r);
// One finding as both reports write it (logs and Prometheus).
nlohmann::json finding_json(const incident::Diagnosis& f);
// The figures a report could not read, as both reports write them.
nlohmann::json unknowns_json(const std::vector<incident::Unknown>& unknowns);
// A figure, or null when it is not known (incident::known).
nlohmann::json known_or_null(double v);
// A whole HTML document. Without the chart bundle (RETRYSTORM_WEB=OFF) it
// holds the tables and findings and says that charts are not built in.
std::string analyze_html(const incident::Report& r);
// True when this program has the report's chart bundle built in.
bool analyze_html_has_charts();

}  // namespace retrystorm

namespace retrystorm {
// A scenario file (YAML) that replays the analyzed incident with the
// session engine; see incident::replay_keys.
std::string replay_yaml(const incident::Report& r);
}  // namespace retrystorm
