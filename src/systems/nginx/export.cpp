// nginx's retry settings written from a scenario: an upstream and a location.
#include <sstream>

#include "systems/export_kit.hpp"

namespace retrystorm::configs {

using namespace kit;  // the exporters' shared pieces

// proxy_next_upstream's conditions for the scenario's retried failures:
// error a refused or reset connection, timeout a timed-out try, http_502,
// http_503 and http_504 a 503 (the model's gateway error), http_429 a 429
// (nginx/import.cpp reads them back).
std::string nginx_conditions(const Scenario& s, std::vector<std::string>& notes) {
  Conditions c(s);
  if (c.wants(FailureClass::refused) || c.wants(FailureClass::reset))
    c.add("error", answer_bit(FailureClass::refused) | answer_bit(FailureClass::reset));
  if (s.client.retry_on_timeout) c.add("timeout", 0);
  if (c.wants(FailureClass::http_503))
    c.add("http_502 http_503 http_504", answer_bit(FailureClass::http_503));
  if (c.wants(FailureClass::http_429)) c.add("http_429", answer_bit(FailureClass::http_429));
  note_retried(s, c.written, "nginx", notes);
  return c.words;
}

// nginx 1.22: an upstream and a location (ngx_http_upstream_next; the facts in
// nginx/import.cpp). nginx tries each server entry at most once, so N retries
// need N + 1 entries: the same address is listed N + 1 times.
void write_nginx(const Scenario& s, Draft& d) {
  auto& [r, fit, retries, notes] = d;
  constexpr double kMaxMs = 1e12;  // far above every key's range
  std::ostringstream u;
  u << "upstream retrystorm_backend {\n";
  u << "    # nginx tries each server entry at most once per request: " << retries + 1
    << (retries == 0 ? " entry, no retries.\n"
                     : " entries\n    # (the same address repeated) allow " +
                           std::to_string(retries) + " retries.\n");
  u << "    # max_fails=0: a failed try does not take the entry out for fail_timeout.\n";
  u << "    # " << kServersPlaceholder << ": the service's servers (replace it with theirs).\n";
  for (int i = 0; i <= retries; ++i) u << "    server " << kServersPlaceholder << " max_fails=0;\n";
  u << "}\n";
  long long t = proxy_ms(s.client.timeout_s, kMaxMs, "proxy_read_timeout", fit, "client.timeout_s");
  std::ostringstream l;
  l << "server {\n    listen 8080;\n    location / {\n";
  l << "        proxy_pass http://retrystorm_backend;\n";
  if (retries == 0) {
    l << "        proxy_next_upstream off;\n";
  } else {
    l << "        proxy_next_upstream " << nginx_conditions(s, notes) << ";\n";
    l << "        proxy_next_upstream_tries " << retries + 1
      << ";  # attempts, the first included\n";
  }
  if (s.client.deadline_s > 0 && retries > 0) {
    long long d = proxy_ms(s.client.deadline_s, kMaxMs, "proxy_next_upstream_timeout", fit,
                           "client.deadline_s");
    l << "        proxy_next_upstream_timeout " << d << "ms;  # no new try after this\n";
    notes.push_back(
        "proxy_next_upstream_timeout stops new tries but does not end a started one: a "
        "request can take up to that plus proxy_read_timeout");
  } else {
    l << "        proxy_next_upstream_timeout 0;  # no limit\n";
    if (s.client.deadline_s > 0)
      notes.push_back("no retries: the scenario's deadline of " +
                      human_duration(s.client.deadline_s) + " is the caller's to set");
  }
  l << "        proxy_connect_timeout " << t << "ms;\n";
  l << "        proxy_send_timeout " << t << "ms;\n";
  l << "        proxy_read_timeout " << t << "ms;  # each attempt (between two reads)\n";
  l << "    }\n}\n";
  if (retries > 0)
    notes.push_back(
        "POST, LOCK and PATCH are not retried once sent; add non_idempotent to "
        "proxy_next_upstream only if the handlers are idempotent");
  proxy_notes(s, retries, system_label(System::nginx), notes);
  server_notes(s, notes);
  std::ostringstream o;
  o << "# " << heading("nginx 1.22", s) << "\n";
  o << "# Both blocks go inside http { }; move the location into your own server { }.\n";
  o << commented(notes, "#") << u.str() << l.str();
  r.text = o.str();
}

}  // namespace retrystorm::configs
