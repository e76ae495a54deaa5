// HAProxy's retry settings written from a scenario: one backend.
#include <sstream>

#include "systems/export_kit.hpp"

namespace retrystorm::configs {

using namespace kit;  // the exporters' shared pieces

// retry-on's keywords for the scenario's retried failures: conn-failure a
// refused connection, empty-response a reset one, response-timeout a
// timed-out attempt, 502 503 504 a 503; a 429 needs HAProxy 3.1 (noted).
std::string haproxy_conditions(const Scenario& s, std::vector<std::string>& notes) {
  Conditions c(s);
  if (c.wants(FailureClass::refused)) c.add("conn-failure", answer_bit(FailureClass::refused));
  if (c.wants(FailureClass::reset)) c.add("empty-response", answer_bit(FailureClass::reset));
  if (s.client.retry_on_timeout) c.add("response-timeout", 0);
  if (c.wants(FailureClass::http_503)) c.add("502 503 504", answer_bit(FailureClass::http_503));
  const AnswerSet k429 = c.wanted & answer_bit(FailureClass::http_429);
  if (k429)
    notes.push_back(
        "retry-on 429 is a keyword of HAProxy 3.1 and later; this 2.6 file does not retry a "
        "429");
  note_retried(s, c.written | k429, "HAProxy", notes);  // the 429 has its own note
  return c.words.empty() ? "none" : c.words;
}

// HAProxy 2.6: a backend (proxy_parse_retry_on, back_handle_st_cer; the facts
// in haproxy/import.cpp). Timers above 2147483647 ms are refused.
void write_haproxy(const Scenario& s, Draft& d) {
  auto& [r, fit, retries, notes] = d;
  std::ostringstream b;
  b << "backend retrystorm\n    mode http\n";
  b << "    retries " << retries << "  # retries, so " << retries + 1 << " attempts per request\n";
  if (retries == 0)
    b << "    retry-on none\n";
  else
    b << "    retry-on " << haproxy_conditions(s, notes) << "\n";
  long long t =
      proxy_ms(s.client.timeout_s, 2147483647.0, "timeout server", fit, "client.timeout_s");
  b << "    timeout connect " << t << "ms\n";
  b << "    timeout server " << t << "ms  # each attempt (time without data from the server)\n";
  b << "    server s1 " << kServersPlaceholder << "  # the service's servers (replace it)\n";
  if (!s.client.retry_on_timeout && retries > 0)
    notes.push_back(
        "retry-on has no response-timeout: an attempt past timeout server is not retried");
  if (s.client.deadline_s > 0)
    notes.push_back("HAProxy has no per-request deadline: the scenario's " +
                    human_duration(s.client.deadline_s) + " must be set by the caller");
  if (retries > 0)
    notes.push_back(
        "HAProxy replays every method on an L7 retry (POST included): make the handlers "
        "idempotent or use retry-on conn-failure for routes that are not");
  proxy_notes(s, retries, system_label(System::haproxy), notes);
  server_notes(s, notes);
  std::ostringstream o;
  o << "# " << heading("HAProxy 2.6", s) << "\n";
  o << "# Goes in haproxy.cfg; point a frontend's default_backend at it.\n";
  o << commented(notes, "#") << b.str();
  r.text = o.str();
}

}  // namespace retrystorm::configs
