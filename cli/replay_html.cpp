// comparison.html of `prima replay` (replay_output.h): one self-contained page, inline CSS and
// inline SVG, no script and no external file: what was replayed, the comparison table(s) and,
// per metric, the CDFs of the measured and simulated values overlaid (and the fitted run's
// with --fit). Each CDF is sampled to at most 400 points.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cli/replay_output.h"

namespace prima::cli {
namespace {

constexpr std::size_t kMaxPoints = 400;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

struct Series {
  std::string label, color, dash;
  std::vector<double> values;  // seconds, sorted
};

// 1, 2 or 5 times a power of ten, near span/5.
double nice_step(double span) {
  const double raw = span / 5, p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string cdf_svg(const std::string& title, std::vector<Series> series) {
  constexpr double W = 460, H = 280, L = 56, R = 12, T = 28, B = 42;
  for (auto& s : series) std::sort(s.values.begin(), s.values.end());
  // The x axis (ms) ends at 1.1 x the largest p99, so one outlier does not flatten the
  // curves, and starts at 0 unless every curve starts far from it (then at the smallest p1).
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& s : series) {
    if (s.values.empty()) continue;
    lo = std::min(lo, s.values[(s.values.size() - 1) / 100] * 1e3);
    hi = std::max(hi, s.values[(s.values.size() - 1) * 99 / 100] * 1e3 * 1.1);
  }
  if (!(hi > 0)) hi = 1;
  if (!(lo < hi) || lo < 0.3 * hi) lo = 0;
  const double step = nice_step(hi - lo);
  lo = std::floor(lo / step) * step;
  auto px = [&](double ms) { return L + (W - L - R) * (std::clamp(ms, lo, hi) - lo) / (hi - lo); };
  auto py = [&](double q) { return T + (H - T - B) * (1 - q); };
  std::string o = fmt::format(
      "<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\"><title>{}</title>",
      W, H, W, H, esc(title));
  o += fmt::format("<text x=\"{}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">{}</text>", L,
                   esc(title));
  // Axes, grid and ticks.
  for (double x = lo; x <= hi + 1e-9; x += step)
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" font-size=\"10\" text-anchor=\"middle\">{4:g}</text>",
        px(x), T, H - B, H - B + 14, x);
  for (double q = 0; q <= 1.0001; q += 0.25)
    o += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" font-size=\"10\" text-anchor=\"end\">{5:g}</text>",
        L, py(q), W - R, L - 6, py(q) + 3, q);
  o += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>", L, T,
      W - L - R, H - T - B);
  o += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">ms</text>"
      "<text x=\"14\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">CDF</text>",
      (L + W - R) / 2, H - 8, (T + H - B) / 2, (T + H - B) / 2);
  // Curves, then the legend (lower right, where CDFs rarely are).
  const double legend_h = 14.0 * static_cast<double>(series.size()) + 6;
  double ly = H - B - legend_h + 10;
  std::string legend = fmt::format(
      "<rect x=\"{}\" y=\"{:.1f}\" width=\"146\" height=\"{:.1f}\" fill=\"white\" "
      "fill-opacity=\"0.85\" stroke=\"#ccc\"/>",
      W - R - 154, H - B - legend_h - 2, legend_h);
  for (const auto& s : series) {
    const std::size_t n = s.values.size();
    if (n > 0) {
      std::string pts;
      const std::size_t k = std::min(n, kMaxPoints);
      for (std::size_t i = 0; i < k; ++i) {
        const std::size_t idx = k == 1 ? 0 : i * (n - 1) / (k - 1);
        const double q = static_cast<double>(idx + 1) / static_cast<double>(n);
        pts += fmt::format("{:.1f},{:.1f} ", px(s.values[idx] * 1e3), py(q));
      }
      o += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{} points=\"{}\"/>", s.color,
          s.dash.empty() ? "" : " stroke-dasharray=\"" + s.dash + "\"", pts);
    }
    legend += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"{}/>"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\">{} ({})</text>",
        W - R - 150, ly, W - R - 130, ly, s.color,
        s.dash.empty() ? "" : " stroke-dasharray=\"" + s.dash + "\"", W - R - 126, ly + 3,
        esc(s.label), n > 0 ? fmt::format("{}", n) : std::string("none"));
    ly += 14;
  }
  return o + legend + "</svg>";
}

std::string ms_cell(double v) {
  return std::isfinite(v) ? fmt::format("{:.2f}", v * 1e3) : "&ndash;";
}
std::string err_cell(double v) {
  return std::isfinite(v) ? fmt::format("{:+.1f}%", v * 100) : "&ndash;";
}

std::string table(const ReplayResult& r) {
  const bool fit = r.fit != nullptr;
  std::string o =
      "<table><tr><th>metric</th><th>stat</th><th>measured ms</th><th>simulated ms</th>"
      "<th>error</th>";
  if (fit) o += "<th>fitted ms</th><th>fitted error</th>";
  o += "</tr>";
  for (int m = 0; m < replay::kNumMetrics; ++m)
    for (int s = 0; s < replay::kNumStats; ++s) {
      const auto& a = r.comparison.metrics[m].stats[s];
      o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                       s == 0 ? replay::metric_name(static_cast<replay::Metric>(m)) : "",
                       replay::stat_name(static_cast<replay::Stat>(s)), ms_cell(a.measured),
                       ms_cell(a.simulated), err_cell(a.error));
      if (fit) {
        const auto& b = r.fit->comparison.metrics[m].stats[s];
        o += fmt::format("<td>{}</td><td>{}</td>", ms_cell(b.simulated), err_cell(b.error));
      }
      o += "</tr>";
    }
  return o + "</table>";
}

}  // namespace

std::string comparison_html(const ReplayResult& r) {
  const replay::MeasuredRun& m = *r.measured;
  std::size_t ok = 0;
  for (const auto& q : m.requests) ok += q.ok;
  std::string o =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>prima replay: " + esc(m.file) +
      "</title><style>body{font-family:sans-serif;margin:1.5em;max-width:1000px}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
      "text-align:right}td:first-child,th:first-child{text-align:left}"
      ".charts{display:flex;flex-wrap:wrap;gap:8px}.note{color:#555;font-size:90%}"
      "</style></head><body>";
  o += "<h1>prima replay</h1><p>" +
       fmt::format("{} ({}, {} requests, {} completed) replayed on scenario <b>{}</b> ({}, {})",
                   esc(m.file), replay::measured_format_name(m.format), m.requests.size(), ok,
                   esc(r.scenario_name), esc(r.scenario_file), esc(r.gpu)) +
       "</p><p>Calibration: " + esc(r.fidelity.summary()) + "</p>";
  if (r.fit) {
    const ReplayFit& f = *r.fit;
    o += f.joint_files.empty() ? "<p>Fit: "
                               : fmt::format("<p>Fit to {} runs together (objective of this run): ",
                                             f.joint_files.size());
    for (std::size_t i = 0; i < f.params.size(); ++i)
      o += fmt::format("{}<code>{}</code> {:.6g} &rarr; {:.6g}", i ? ", " : "", f.params[i]->name,
                       f.initial[i], f.fitted[i]);
    o += fmt::format("; objective {:.4g} &rarr; {:.4g} in {} iterations ({} simulations{}). ",
                     f.initial_objective, f.fitted_objective, f.iterations, f.evaluations,
                     f.converged ? ", converged" : ", iteration cap") +
         esc(f.profile.fidelity.summary()) + "</p>";
  }
  o += "<p class=\"note\">error = (simulated &minus; measured) / measured. Percentiles interpolate "
       "between ranks.</p>";
  o += table(r);
  o += "<h2>Distributions</h2><p class=\"note\">CDFs of completed requests (ITL: every gap "
       "between tokens; a simulated request without recorded gaps counts its TPOT per gap). The "
       "x axis ends at 1.1&times; the largest p99.</p><div class=\"charts\">";
  const char* titles[] = {"TTFT", "TPOT", "ITL", "E2E", "queue"};
  for (int mi = 0; mi < replay::kNumMetrics; ++mi) {
    const auto metric = static_cast<replay::Metric>(mi);
    std::vector<Series> s = {{"measured", "#1f77b4", "", r.measured_samples.of(metric)},
                             {"simulated", "#d62728", "", r.simulated_samples.of(metric)}};
    if (r.fit) s.push_back({"fitted", "#2ca02c", "6 3", r.fit->samples.of(metric)});
    o += cdf_svg(titles[mi], std::move(s));
  }
  return o + "</div></body></html>\n";
}

}  // namespace prima::cli
