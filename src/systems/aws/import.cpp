// AWS SDK shared config file (INI): max_attempts, retry_mode.
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "systems/readers.hpp"
#include "systems/room.hpp"
#include "text/ascii.hpp"

namespace retrystorm::configs {

namespace {

std::string trim(const std::string& s) {
  auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

struct Entry {
  std::string value;
  int line = 0;
};
struct Section {
  std::string name;  // "default", "profile dev"
  int line = 0;
  std::vector<std::pair<std::string, Entry>> entries;
};

const std::set<std::string> kKnownKeys = {"region",
                                          "output",
                                          "max_attempts",
                                          "retry_mode",
                                          "role_arn",
                                          "source_profile",
                                          "credential_source",
                                          "credential_process",
                                          "external_id",
                                          "mfa_serial",
                                          "role_session_name",
                                          "duration_seconds",
                                          "web_identity_token_file",
                                          "sso_session",
                                          "sso_account_id",
                                          "sso_role_name",
                                          "sso_start_url",
                                          "sso_region",
                                          "sso_registration_scopes",
                                          "ca_bundle",
                                          "cli_pager",
                                          "cli_timestamp_format",
                                          "cli_follow_urlparam",
                                          "cli_binary_format",
                                          "cli_history",
                                          "cli_auto_prompt",
                                          "s3",
                                          "s3api",
                                          "services",
                                          "endpoint_url",
                                          "ignore_configured_endpoint_urls",
                                          "use_fips_endpoint",
                                          "use_dualstack_endpoint",
                                          "defaults_mode",
                                          "parameter_validation",
                                          "tcp_keepalive",
                                          "metadata_service_timeout",
                                          "metadata_service_num_attempts",
                                          "aws_access_key_id",
                                          "aws_secret_access_key",
                                          "aws_session_token",
                                          "api_versions",
                                          "sdk_ua_app_id",
                                          "request_min_compression_size_bytes",
                                          "disable_request_compression",
                                          "account_id_endpoint_mode",
                                          "aws_account_id",
                                          "endpoint_discovery_enabled",
                                          "csm_enabled",
                                          "csm_client_id",
                                          "csm_host",
                                          "csm_port",
                                          "ec2_metadata_service_endpoint",
                                          "ec2_metadata_service_endpoint_mode",
                                          "ec2_metadata_v1_disabled",
                                          "aws_sigv4a_signing_region_set",
                                          "auth_scheme_preference",
                                          "request_checksum_calculation",
                                          "response_checksum_validation",
                                          "sigv4a_signing_region_set"};

// botocore's backoff: retry n waits U(0, 1) x 2^(n-1) s, capped at 20 s in
// standard mode (ExponentialBackoff.delay_amount, botocore/retries/standard.py)
// and not capped at all in legacy mode (delay_exponential,
// botocore/retryhandler.py; base "rand" in botocore/data/_retry.json).
void read_aws_backoff(LayerPolicy& l, bool legacy, const std::string& mode_from) {
  l.backoff.base_s = 1;
  l.backoff.multiplier = 2;
  l.backoff.cap_s = legacy ? 0 : 20;
  l.backoff.jitter = Jitter::full;
  l.from["client.backoff.base_s"] = mode_from + ": retry n waits U(0, 1) x 2^(n-1) seconds";
  l.from["client.backoff.multiplier"] = "AWS SDKs double the backoff each retry";
  l.from["client.backoff.cap_s"] = legacy
                                       ? mode_from + ": botocore's legacy mode has no backoff cap"
                                       : mode_from + ": standard mode caps the backoff at 20 s";
  l.from["client.backoff.jitter"] = "AWS SDKs draw each delay uniformly below the window";
  if (!legacy)
    l.notes.push_back(
        "backoff read as botocore's standard mode; aws-sdk-go-v2 waits U(0, 2^n) s for retry n "
        "and exactly 20 s from retry 5, aws-sdk-js-v3 U(0, 0.1 x 2^(n-1)) s; not modelled "
        "(docs/configs.md, \"AWS SDKs\")");
}

// Where a line's text starts: configparser's indent level (the first
// non-whitespace character, a tab counting as one).
size_t indent_of(const std::string& raw) {
  size_t p = raw.find_first_not_of(" \t\r\f\v");
  return p == std::string::npos ? raw.size() : p;
}

// The INI file's sections and their settings, as botocore's
// configparser.RawConfigParser reads them: a line indented deeper than the
// setting before it (blank and comment lines between) continues that
// setting's value. Under "s3 =" (an empty value) those lines are botocore's
// nested service settings, skipped; under a value of its own the line is
// part of that value, never a setting, and is warned about.
std::vector<Section> parse_sections(const std::string& text, const Reader& r) {
  std::vector<Section> sections;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  bool open = false;    // a setting is open: deeper lines continue it
  bool nested = false;  // the open setting's value was empty ("s3 =")
  size_t open_indent = 0;
  std::string blanks;  // blank lines inside the open value, kept as configparser keeps them
  while (std::getline(in, raw)) {
    ++line;
    std::string t = trim(raw);
    if (t.empty()) blanks += '\n';
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;  // neither ends a value
    const size_t indent = indent_of(raw);
    if (!open || indent <= open_indent) {
      blanks.clear();
    } else {
      // Checked before a [header] too: configparser reads "  [x]" here as value.
      auto& [name, entry] = sections.back().entries.back();
      const Where w{r.file, "[" + sections.back().name + "] " + name, line};
      if (nested) {
        // botocore's _parse_nested (configloader.py) splits each line at '='
        // and refuses the file when one has none.
        if (t.find('=') == std::string::npos)
          fail(w, "'" + t + "' under '" + name +
                      " =' is not 'key = value'; botocore refuses the file (a nested setting)");
        continue;
      }
      r.warn(w, "'" + t + "' is indented deeper than the setting on line " +
                    std::to_string(entry.line) +
                    ", so botocore (configparser) reads it as part of " + name +
                    "'s value, not as a setting of its own; unindent it to set it");
      entry.value += blanks + "\n" + t;
      blanks.clear();
      continue;
    }
    if (t[0] == '[') {
      // configparser's header is from '[' to the last ']' on the line; what
      // follows it (a comment) is left (SECTCRE in Python's configparser).
      const size_t close = t.rfind(']');
      if (close == std::string::npos || close < 2)
        fail({r.file, "", line}, "a section header is [name]");
      std::string name = trim(t.substr(1, close - 1));
      for (const Section& earlier : sections)
        if (earlier.name == name)
          fail({r.file, "[" + name + "]", line},
               "the section appears twice (line " + std::to_string(earlier.line) +
                   "); botocore refuses the file (configparser's strict reading)");
      sections.push_back({name, line, {}});
      open = false;
      continue;
    }
    // configparser splits at the first '=' or ':' (OPTCRE).
    auto eq = t.find_first_of("=:");
    if (eq == std::string::npos)
      fail({r.file, "", line}, "expected 'key = value' (or 'key: value') or a [section] header");
    if (sections.empty())
      fail({r.file, trim(t.substr(0, eq)), line}, "a setting before any [profile] section");
    std::string k = trim(t.substr(0, eq)), v = trim(t.substr(eq + 1));
    if (k.empty()) fail({r.file, "", line}, "a setting without a name");
    // configparser compares names in lower case and refuses a second one.
    for (const auto& [earlier, entry] : sections.back().entries)
      if (text::lower_ascii(earlier) == text::lower_ascii(k))
        fail({r.file, "[" + sections.back().name + "] " + k, line},
             "the setting appears twice in its section (line " + std::to_string(entry.line) +
                 "); botocore refuses the file (configparser's strict reading)");
    sections.back().entries.push_back({k, {v, line}});
    open = true;
    nested = v.empty();
    open_indent = indent;
  }
  return sections;
}

// A value continued over indented lines (parse_sections) is several lines
// long to botocore, which refuses it as a number or a retry mode.
void one_line(const Entry& e, const Where& w) {
  if (e.value.find('\n') == std::string::npos) return;
  std::string shown;
  for (char c : e.value) shown += c == '\n' ? std::string("\\n") : std::string(1, c);
  fail(w, "the value runs on over the indented lines below it: botocore reads '" + shown +
              "' and refuses it; unindent those lines");
}

// The profile read: [default] (or [profile default]), else the first [profile NAME].
const Section& pick_profile(const std::vector<Section>& sections, const Reader& r) {
  const Section* pick = nullptr;
  int profiles = 0;
  for (const auto& s : sections) {
    bool profile = s.name == "default" || s.name.rfind("profile ", 0) == 0;
    if (!profile) continue;
    ++profiles;
    if (s.name == "default" || s.name == "profile default") pick = &s;
  }
  if (!pick)
    for (const auto& s : sections)
      if (s.name.rfind("profile ", 0) == 0) {
        pick = &s;
        break;
      }
  if (!pick)
    fail({r.file, "", sections.empty() ? 0 : sections[0].line},
         "no [default] or [profile NAME] section");
  if (profiles > 1)
    r.warn({r.file, "[" + pick->name + "]", pick->line},
           std::to_string(profiles) + " profiles; [" + pick->name + "] is read");
  return *pick;
}

// max_attempts and retry_mode of the profile; a warning for each other
// setting that is not one of the AWS config keys.
struct ProfileSettings {
  const Entry* attempts = nullptr;
  const Entry* mode = nullptr;
};

ProfileSettings find_settings(const Section& pick, const std::string& section, const Reader& r) {
  ProfileSettings found;
  for (const auto& [name, e] : pick.entries) {
    const std::string k = text::lower_ascii(name);  // configparser's optionxform
    if (k == "max_attempts")
      found.attempts = &e;
    else if (k == "retry_mode")
      found.mode = &e;
    else if (!kKnownKeys.count(k))
      r.warn({r.file, section + " " + k, e.line}, "unknown setting, ignored");
  }
  return found;
}

// max_attempts, or the mode's default (legacy 5, standard and adaptive 3).
void read_max_attempts(const Entry* attempts, const std::string& m, const std::string& section,
                       Reader& r) {
  LayerPolicy& l = r.layer;
  long long n = m == "legacy" ? 5 : 3;
  const Where w{r.file, section + " max_attempts", attempts ? attempts->line : 0};
  if (attempts) {
    YAML::Node v(attempts->value);
    one_line(*attempts, w);
    n = whole(v, w, 1, 1LL << 31);
    l.from["client.retries"] = w.text() + ": " + std::to_string(n) +
                               " (attempts, the first "
                               "included; " +
                               std::to_string(n - 1) + " retries)";
  } else {
    l.from["client.retries"] = r.file + ": max_attempts left out (" + m + " mode default " +
                               std::to_string(n) + " attempts)";
  }
  l.as_written = n;
  l.retries = model_retries(n - 1, w, r, Counted::attempts);
}

// The retry quota of standard and adaptive mode; legacy mode has none.
void read_retry_quota(const std::string& m, const std::string& mode_from, LayerPolicy& l) {
  if (m == "legacy") {
    l.budget.kind = BudgetKind::none;
    l.from["client.budget.kind"] = mode_from + ": legacy mode has no retry quota";
  } else {
    l.budget.kind = BudgetKind::aws_quota;
    l.set_budget("quota_tokens", 500);
    l.set_budget("retry_cost", 5);
    l.set_budget("timeout_cost", 10);
    l.set_budget("success_reward", 1);
    l.from["client.budget.kind"] = mode_from + ": the retry quota of standard mode";
    l.from["client.budget.quota_tokens"] = "AWS retry quota: 500 tokens";
    l.from["client.budget.retry_cost"] = "a retry costs 5 tokens";
    l.from["client.budget.timeout_cost"] = "a retry after a timeout costs 10 tokens";
    l.from["client.budget.success_reward"] = "a success without retry returns 1 token";
    if (m == "adaptive")
      l.notes.push_back(
          "adaptive mode adds a client-side rate limiter that can delay first attempts: "
          "client.rate_limiter aws_adaptive, run by the agent engine (docs/policies.md, \"AWS "
          "adaptive mode\")");
  }
}

}  // namespace

void read_aws(const std::string& text, Reader& r) {
  LayerPolicy& l = r.layer;
  if (text.size() > 4 * 1024 * 1024) fail({r.file, "", 0}, "larger than 4 MiB");
  std::vector<Section> sections = parse_sections(text, r);
  const Section& pick = pick_profile(sections, r);
  std::string section = "[" + pick.name + "]";
  l.format = "AWS config profile " + section;
  l.has_retry_policy = true;
  l.has_budget_part = true;
  l.counting = "attempts";
  l.count_field = "max_attempts";
  auto [attempts, mode] = find_settings(pick, section, r);
  l.spots["section"] = {pick.line - 1, 0};  // lint's file edits
  if (mode) l.spots["retry_mode"] = {mode->line - 1, 0};
  if (attempts) l.spots["max_attempts"] = {attempts->line - 1, 0};
  // botocore (boto3) defaults to legacy (configprovider.py: _DEFAULT_RETRY_MODE
  // = 'standard' if NEW_RETRIES_ENABLED else 'legacy'); the AWS CLI v2, Go v2
  // and JS v3 SDKs default to standard. Read as botocore, with a warning.
  if (mode) one_line(*mode, {r.file, section + " retry_mode", mode->line});
  std::string m = mode ? mode->value : "legacy";
  if (m != "legacy" && m != "standard" && m != "adaptive")
    fail({r.file, section + " retry_mode", mode->line},
         "'" + m + "' is not a retry mode; choose legacy, standard or adaptive");
  read_max_attempts(attempts, m, section, r);
  std::string mode_from = mode
                              ? Where{r.file, section + " retry_mode", mode->line}.text() + ": " + m
                              : r.file + ": retry_mode left out: botocore's default, legacy";
  if (!mode)
    r.warn({r.file, section, pick.line},
           "retry_mode left out: read as legacy, botocore's (boto3's) default (5 attempts, no "
           "backoff cap, no retry quota); the AWS CLI v2 and the Go v2 and JS v3 SDKs default "
           "to standard: write retry_mode = standard to say which");
  l.settings["retry_mode"] = m;
  if (m == "adaptive") {
    l.rate_limiter = RateLimiter::aws_adaptive;
    l.from["client.rate_limiter"] = mode_from +
                                    ": each client paces its attempts after a throttling answer "
                                    "(botocore ClientRateLimiter; agent engine)";
  }
  read_aws_backoff(l, m == "legacy", mode_from);
  if (m != "legacy" && l.retries >= 6)  // 2^5 > 20: the cap bites
    l.notes.push_back(
        "botocore before 1.34.107 caps each delay after the jitter, min(U(0, 2^(n-1)), 20) s: "
        "from retry 6 it waits exactly 20 s more often than the model's U(0, 20); 1.34.107 and "
        "later draw U(0, min(2^(n-1), 20)), as the model does (docs/conformance.md, \"AWS "
        "SDKs\")");
  l.retry_on_timeout = true;
  // botocore retries/standard.py: throttling codes (429 among them),
  // transient status codes (500, 502, 503, 504) and connection errors.
  l.retried_answers = kAllAnswers;
  l.from["client.retry_on"] =
      "AWS standard and legacy modes: throttling (429), transient errors (503) and connection "
      "errors (refused, reset) are retried";
  l.from["client.retry_on_timeout"] = "AWS SDKs retry timeouts and transient errors";
  l.deadline_s = 0;
  l.from["client.deadline_s"] = "the AWS config file sets no overall deadline";
  l.notes.push_back(
      "the AWS config file sets no per-attempt timeout; client.timeout_s is not "
      "imported");
  read_retry_quota(m, mode_from, l);
  l.budget_from = l.from["client.budget.kind"];
}

// An INI file whose first setting is a [section] or max_attempts / retry_mode.
bool looks_like_aws(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  static const std::regex section(R"(^\s*\[\s*[A-Za-z0-9_.@ -]+\s*\]\s*$)");
  static const std::regex retry_line(R"(^\s*(max_attempts|retry_mode)\s*=)");
  bool first = true;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto p = line.find_first_not_of(" \t");
    if (p == std::string::npos || line[p] == '#' || line[p] == ';') continue;
    if (line.size() > 4096) return false;
    if (first && std::regex_match(line, section)) return true;
    if (std::regex_search(line, retry_line)) return true;
    first = false;
  }
  return false;
}

}  // namespace retrystorm::configs
