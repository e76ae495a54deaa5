// What each system's room (src/systems/<name>/) gives the rest of
// src/systems: its reader, its writer, and the terms and budget its lint
// fixes are written in. Internal to src/systems; the table is system.cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "systems/export.hpp"
#include "systems/import.hpp"
#include "systems/readers.hpp"
#include "systems/system.hpp"

namespace retrystorm::configs {

namespace kit {
struct Draft;  // export_kit.hpp
}

// The names a system gives the settings a lint fix changes.
struct LintTerms {
  std::string retries, per_try, deadline, cap;
  bool counts_attempts = false;  // the count field counts attempts, not retries
  // How to turn retries off where writing a count of 0 does not ("": it
  // does), as an instruction ("remove ...", "set ...").
  std::string no_retries;
  // How to retry less where the file has no count to lower ("": it has one).
  std::string no_count;
  // How the file writes a count: "retries" + assign + "2" + end.
  std::string assign = " = ", end;
};

// A fix as scenario keys.
using KeyFix = std::vector<std::pair<std::string, KeyValue>>;

// How to add a retry budget, in the system's words and as scenario keys
// (none: the system has no budget, the fix is the text only).
struct BudgetFix {
  std::string text;
  KeyFix keys;
};

struct Room {
  System system;
  // YAML or JSON documents (Envoy, gRPC, Istio, Linkerd, retrystorm-policy),
  // or text with a tokenizer of its own (AWS INI, HAProxy, nginx) that
  // `looks_like` detects before any YAML parse.
  void (*read_documents)(const std::vector<YAML::Node>& docs, Reader& r) = nullptr;
  void (*read_text)(const std::string& text, Reader& r) = nullptr;
  bool (*looks_like)(const std::string& text) = nullptr;
  // Fills the draft export_config makes (export_kit.hpp); null: not exported.
  void (*write)(const Scenario& s, kit::Draft& d) = nullptr;
  double min_duration_s = 0;  // the shortest duration its files express
  // What lint's fixes call the settings, and how a budget is added.
  LintTerms terms;
  BudgetFix budget_fix;
  // Lint facts: where a budget applies ("per Envoy instance"), whether the
  // caller sets the deadline (no deadline rule), whether the file's count
  // is ours (no counting rule).
  const char* budget_scope = "";
  // How the layer itself stops retrying at its deadline, in words ("": it
  // does not, so retries past the deadline are work the caller never sees).
  const char* deadline_stops = "";
  bool caller_sets_deadline = false;
  bool our_own_format = false;
};

const Room& room(System s);
// The room's terms for this layer: a Linkerd ServiceProfile retries at once.
LintTerms lint_terms(const LayerPolicy& l);

// Each room's reader and writer (src/systems/<name>/{import,export}.cpp).
void write_envoy(const Scenario& s, kit::Draft& d);
void write_grpc(const Scenario& s, kit::Draft& d);
void write_istio(const Scenario& s, kit::Draft& d);
void write_linkerd(const Scenario& s, kit::Draft& d);
void write_aws(const Scenario& s, kit::Draft& d);
void write_haproxy(const Scenario& s, kit::Draft& d);
void write_nginx(const Scenario& s, kit::Draft& d);
bool looks_like_aws(const std::string& text);

}  // namespace retrystorm::configs
