// The HTML view of an incident analysis: one file that opens from disk. The
// tables and findings are written here; the charts are drawn by the bundled
// chart code from the report's JSON, embedded in the page.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "analysis/summary.hpp"
#include "formats/analyze_report.hpp"
#include "formats/report_assets.hpp"
#include "text/clock.hpp"
#include "text/number.hpp"

namespace retrystorm {

using namespace incident;

namespace {

// `s` with each character that `swap` names written as its text.
std::string substituted(const std::string& s,
                        std::initializer_list<std::pair<char, const char*>> swap) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto hit = std::find_if(swap.begin(), swap.end(), [c](const auto& p) { return p.first == c; });
    if (hit == swap.end())
      out += c;
    else
      out += hit->second;
  }
  return out;
}

std::string escape(const std::string& s) {
  return substituted(s, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}});
}

// JSON inside <script>: "</script" would end the element and "<!--" with
// "<script" would put the parser in the double-escaped state, where the
// element no longer ends at its "</script>". No "<" at all rules out both;
// these characters only occur inside JSON strings, so \uXXXX is the same value.
std::string script_json(const nlohmann::json& j) {
  return substituted(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                     {{'<', "\\u003c"}, {'>', "\\u003e"}, {'&', "\\u0026"}});
}

// Script text inside <script>: "</script" would end the element.
std::string script_text(std::string_view js) {
  std::string out(js);
  for (size_t at = 0; (at = out.find("</script", at)) != std::string::npos; at += 2)
    out.replace(at, 2, "<\\/");
  return out;
}

std::string cell(double v, int digits) {
  if (!known(v)) return "<td class=\"unknown\">-</td>";
  return "<td>" + text::fixed_text(v, digits) + "</td>";
}

std::string card(const std::string& label, const std::string& value) {
  return "<div class=\"card\"><div class=\"label\">" + escape(label) +
         "</div><div class=\"value\">" + escape(value) + "</div></div>";
}

void findings_html(std::ostringstream& o, const Report& r) {
  o << "<section><h2>Diagnosis</h2><ol class=\"findings\" data-testid=\"findings\">";
  if (r.findings.empty()) o << "<li>No finding stands out; see the figures below.</li>";
  for (const auto& f : r.findings) {
    o << "<li data-finding=\"" << escape(f.id) << "\"><strong>" << escape(f.title)
      << "</strong><ul>";
    for (const auto& e : f.evidence) o << "<li>" << escape(e) << "</li>";
    o << "</ul><p class=\"fix\">Fix: " << escape(f.fix) << "</p></li>";
  }
  o << "</ol></section>";
}

void hours_html(std::ostringstream& o, const Report& r) {
  o << "<section><h2>Per hour</h2><div class=\"table\"><table data-testid=\"hours\"><thead><tr>"
       "<th>hour</th><th>launches (λ)</th><th>W (min)</th><th>L</th><th>λ·W</th><th>ρ</th>"
       "<th>peak</th><th>done</th><th>failed</th><th>fail share</th><th>goodput</th>"
       "<th>working</th><th>blocked</th><th>asleep</th><th>errors</th></tr></thead><tbody>";
  for (const auto& h : r.hours)
    o << "<tr><th>" << escape(hour_label(h.hour)) << "</th>" << cell(h.launches, 0)
      << cell(h.mean_duration_s / text::kMinute, 1) << cell(h.in_flight, 2) << cell(h.little, 2)
      << cell(h.utilization, 2) << cell(h.peak, 0) << cell(h.completions, 0) << cell(h.failures, 0)
      << cell(h.failure_share, 2) << cell(h.goodput, 0) << cell(h.working, 2) << cell(h.blocked, 2)
      << cell(h.asleep, 2) << cell(h.errors, 0) << "</tr>";
  o << "</tbody></table></div></section>";
}

const char* kStyle = R"(
:root{--fg:#1d2330;--muted:#5b6475;--bg:#fff;--card:#f3f5f9;--line:#d9dee8;--accent:#e45756}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9f0;--muted:#9aa3b5;--bg:#141821;--card:#1d2330;--line:#2f3747}}
body{font:15px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1100px;padding:16px}
h1{font-size:1.5rem;margin:.2em 0}h2{font-size:1.15rem;margin:1.2em 0 .4em;border-bottom:1px solid var(--line)}
.muted{color:var(--muted)}.cards{display:flex;flex-wrap:wrap;gap:8px}.card{background:var(--card);padding:8px 12px;border-radius:6px;min-width:120px}
.card .label{color:var(--muted);font-size:.8rem}.card .value{font-size:1.15rem;font-weight:600}
.findings>li{margin:.6em 0}.fix{margin:.2em 0;color:var(--muted)}
.table{overflow-x:auto}table{border-collapse:collapse;font-size:.82rem;font-variant-numeric:tabular-nums}
td,th{padding:2px 6px;text-align:right;border-bottom:1px solid var(--line)}td.unknown{color:var(--muted)}
pre{overflow-x:auto;font-size:.78rem}
.chart{min-height:40px;margin:8px 0}.chart h3{font-size:.95rem;margin:.3em 0}
)";

}  // namespace

bool analyze_html_has_charts() {
  return !report_script().empty();
}

std::string analyze_html(const Report& r) {
  std::ostringstream o;
  o << "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
       "<title>retrystorm analyze: incident report</title><style>"
    << kStyle << report_style()
    << "</style></head><body><header><h1>Incident report</h1><p class=\"muted\">";
  for (const auto& s : r.sources) o << escape(s) << "<br>";
  for (const auto& w : r.warnings) o << "<strong>Warning:</strong> " << escape(w) << "<br>";
  o << "</p></header><div class=\"cards\">" << card(r.unit, format_amount(r.sessions))
    << card("completed", format_amount(r.completed)) << card("failed", format_amount(r.failed))
    << card("mean in flight (L)", known(r.mean_in_flight) ? format_amount(r.mean_in_flight) : "-")
    << card("peak in flight", format_amount(r.peak))
    << card("error lines", format_amount(r.errors.lines))
    << card("pinned failures",
            known(r.durations.pinned_share) ? format_percent(r.durations.pinned_share) : "unknown")
    << card("asleep share",
            known(r.occupancy.asleep) ? format_percent(r.occupancy.asleep) : "unknown")
    << "</div>";
  findings_html(o, r);
  o << "<section><h2>Charts</h2>";
  if (!analyze_html_has_charts())
    o << "<p class=\"muted\">This program was built without the page (RETRYSTORM_WEB=OFF), so "
         "the report has no charts; the tables hold every figure.</p>";
  o << "<div class=\"chart\" id=\"chart-load\" data-testid=\"chart-load\"></div>"
       "<div class=\"chart\" id=\"chart-occupancy\" data-testid=\"chart-occupancy\"></div>"
       "<div class=\"chart\" id=\"chart-errors\" data-testid=\"chart-errors\"></div>"
       "<div class=\"chart\" id=\"chart-durations\" data-testid=\"chart-durations\"></div>"
       "</section>";
  hours_html(o, r);
  if (!r.unknowns.empty()) {
    o << "<section><h2>Unknown</h2><ul>";
    for (const auto& u : r.unknowns)
      o << "<li><strong>" << escape(u.figure) << "</strong>: " << escape(u.reason) << "</li>";
    o << "</ul></section>";
  }
  o << "<section><h2>Full text report</h2><pre>" << escape(analyze_text(r)) << "</pre></section>";
  o << "<script type=\"application/json\" id=\"report-data\">" << script_json(analyze_json(r))
    << "</script>";
  if (analyze_html_has_charts()) o << "<script>" << script_text(report_script()) << "</script>";
  o << "</body></html>\n";
  return o.str();
}

}  // namespace retrystorm
