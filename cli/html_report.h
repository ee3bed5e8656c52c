// Self-contained HTML reports: renders DIR/report.html from the files a run wrote,
// with the Python renderer under reports/ (matplotlib; embedded in the binary, so it works
// from any directory). Kinds: "simulate" (report.json, requests.csv, timeline.csv: summary
// tables, latency CDFs, timelines of queue/latency/utilization with fault windows shaded)
// and "plan" (plan.json, results.jsonl: ranked table, throughput-vs-rate curves with the SLO
// line, Pareto front of cost vs goodput, what was pruned and why).
// A missing python3 or matplotlib is an error naming what to install (scripts/setup.sh
// installs both); callers may treat it as a warning. Not thread-safe (runs a child process).
#pragma once

#include <string>

#include "engine/core/status.h"

namespace prima::cli {

Status render_html_report(const std::string& kind, const std::string& dir);

}  // namespace prima::cli
