// Self-contained HTML reports: renders DIR/report.html from the files a run wrote,
// with the Python renderer under reports/ (render.py and its modules, matplotlib; embedded in
// the binary, so it works from any directory). Kinds: "simulate" (report.json, requests.csv,
// timeline.csv: the verdict, summary tables, latency CDFs, timelines with the binding limit
// and fault windows; an incident's onset, peak, recovery and before/during/after figures)
// and "plan" (plan.json, results.jsonl: the answer, one ranking, failures and pruned reasons,
// Pareto fronts). A comparison puts two simulate runs on shared axes.
// A missing python3 or matplotlib is an error naming what to install (scripts/setup.sh
// installs both); callers may treat it as a warning. Not thread-safe (runs a child process).
#pragma once

#include <string>

#include "engine/core/status.h"

namespace prima::cli {

Status render_html_report(const std::string& kind, const std::string& dir);
// Two simulate runs (before: the symptom or the baseline; after: the mitigation or the
// change) on one page, written to out_file.
Status render_html_comparison(const std::string& before, const std::string& after,
                              const std::string& out_file);

}  // namespace prima::cli
