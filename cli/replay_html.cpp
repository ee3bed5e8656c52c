// comparison.html of `prima replay` (replay_output.h): one self-contained page, inline CSS (the
// reports' shared reports/style.css) and inline SVG, no script and no external file: the
// verdict (each metric within or outside the calibration's stated error), what was replayed,
// the comparison table(s) with coloured error cells and, per metric, the CDFs of the measured
// and simulated values overlaid (and the fitted run's with --fit). Each CDF is sampled to at
// most 400 points; latencies read in ms, or in s where a metric's p99 reaches 10 s.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cli/replay_output.h"
#include "engine/config/embedded.h"

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

// Latencies read in ms, or in s when the largest one shown reaches 10 s.
struct Unit {
  const char* name;
  double per_s;  // units per second
};
Unit unit_for(double largest_s) {
  return largest_s >= 10 ? Unit{"s", 1} : Unit{"ms", 1e3};
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
  // The x axis ends at 1.1 x the largest p99, so one outlier does not flatten the curves,
  // and starts at 0 unless every curve starts far from it (then at the smallest p1).
  double largest = 0;
  for (const auto& s : series)
    if (!s.values.empty()) largest = std::max(largest, s.values[(s.values.size() - 1) * 99 / 100]);
  const Unit unit = unit_for(largest);
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& s : series) {
    if (s.values.empty()) continue;
    lo = std::min(lo, s.values[(s.values.size() - 1) / 100] * unit.per_s);
    hi = std::max(hi, s.values[(s.values.size() - 1) * 99 / 100] * unit.per_s * 1.1);
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
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>"
      "<text x=\"14\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {})\">CDF</text>",
      (L + W - R) / 2, H - 8, unit.name, (T + H - B) / 2, (T + H - B) / 2);
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
        pts += fmt::format("{:.1f},{:.1f} ", px(s.values[idx] * unit.per_s), py(q));
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

// The error a replay is judged against: the calibration's stated (out-of-sample) maximum, or
// -1 when the calibration states none (uncalibrated).
double stated_bound(const perf::Fidelity& f) {
  return f.calibrated && f.max_abs_error >= 0 ? f.max_abs_error : -1;
}

// Per metric, the largest |error| over its statistics (NaN when nothing was measured).
struct MetricVerdict {
  replay::Metric metric;
  double worst = std::numeric_limits<double>::quiet_NaN();
  replay::Stat worst_stat = replay::Stat::kMean;
};
std::vector<MetricVerdict> verdicts(const replay::Comparison& c) {
  std::vector<MetricVerdict> out;
  for (int m = 0; m < replay::kNumMetrics; ++m) {
    MetricVerdict v{static_cast<replay::Metric>(m)};
    for (int s = 0; s < replay::kNumStats; ++s) {
      const double e = c.metrics[m].stats[s].error;
      if (std::isfinite(e) && (!std::isfinite(v.worst) || std::fabs(e) > std::fabs(v.worst))) {
        v.worst = e;
        v.worst_stat = static_cast<replay::Stat>(s);
      }
    }
    if (std::isfinite(v.worst)) out.push_back(v);
  }
  return out;
}

// td class of an error: within the bound (10% when none is stated), within twice it, beyond.
const char* err_class(double e, double bound) {
  const double b = bound >= 0 ? bound : 0.10;
  const double a = std::fabs(e);
  return !std::isfinite(e) ? "" : a <= b ? "ok" : a <= 2 * b ? "near" : "fail";
}

std::string worst_text(const MetricVerdict& v) {
  std::string name = replay::metric_name(v.metric);
  for (auto& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return fmt::format("{} ({} {:+.0f}%)", name, replay::stat_name(v.worst_stat), v.worst * 100);
}

// The verdict box: which metrics the replay reproduces within the stated error.
std::string verdict_box(const replay::Comparison& c, const perf::Fidelity& f, const char* what) {
  const double bound = stated_bound(f);
  std::vector<std::string> in, out;
  for (const auto& v : verdicts(c))
    (bound >= 0 && std::fabs(v.worst) <= bound ? in : out).push_back(worst_text(v));
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  std::string cls, head, body;
  if (in.empty() && out.empty()) {
    cls = "mixed";
    head = fmt::format("{}: nothing to compare", what);
  } else if (bound < 0) {
    cls = "mixed";
    head = fmt::format("{}: no stated error to judge against (uncalibrated)", what);
    body = "Largest deviation per metric: " + join(out) + ".";
  } else if (out.empty()) {
    cls = "ok";
    head = fmt::format("{}: within the stated error (&plusmn;{:.1f}%) on every metric", what,
                       bound * 100);
    body = "Largest deviation per metric: " + join(in) + ".";
  } else {
    cls = in.empty() ? "fail" : "mixed";
    head = fmt::format("{}: outside the stated error (&plusmn;{:.1f}%) on {} of {} metrics", what,
                       bound * 100, out.size(), in.size() + out.size());
    body = "Outside: " + join(out) + "." + (in.empty() ? "" : " Within: " + join(in) + ".");
  }
  return fmt::format(
      "<div class=\"verdict {}\" data-verdict=\"{}\"><h2>{}</h2><p>{}</p><p class=\"note\">The "
      "stated error is the calibration's out-of-sample maximum ({}); a metric is within it when "
      "every statistic (mean, p50, p90, p99) is.</p></div>",
      cls, cls, head, body, esc(f.summary()));
}

std::string time_cell(double v, const Unit& u) {
  return std::isfinite(v) ? fmt::format("{:.{}f} {}", v * u.per_s, u.per_s == 1 ? 2 : 1, u.name)
                          : "&ndash;";
}
std::string err_cell(double v, double bound) {
  if (!std::isfinite(v)) return "<td>&ndash;</td>";
  return fmt::format("<td class=\"{}\">{:+.1f}%</td>", err_class(v, bound), v * 100);
}

std::string table(const ReplayResult& r) {
  const bool fit = r.fit != nullptr;
  const double bound = stated_bound(r.fidelity);
  std::string o =
      "<table><tr><th>metric</th><th>stat</th><th>measured</th><th>simulated</th>"
      "<th>error</th>";
  if (fit) o += "<th>fitted</th><th>fitted error</th>";
  o += "</tr>";
  for (int m = 0; m < replay::kNumMetrics; ++m) {
    const auto& stats = r.comparison.metrics[m].stats;
    if (!std::isfinite(stats[0].measured)) continue;  // not measured: nothing to compare
    double largest = 0;
    for (const auto& a : stats)
      for (double v : {a.measured, a.simulated})
        if (std::isfinite(v)) largest = std::max(largest, v);
    const Unit u = unit_for(largest);
    for (int s = 0; s < replay::kNumStats; ++s) {
      const auto& a = stats[s];
      o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}",
                       s == 0 ? replay::metric_name(static_cast<replay::Metric>(m)) : "",
                       replay::stat_name(static_cast<replay::Stat>(s)), time_cell(a.measured, u),
                       time_cell(a.simulated, u), err_cell(a.error, bound));
      if (fit) {
        const auto& b = r.fit->comparison.metrics[m].stats[s];
        o += fmt::format("<td>{}</td>{}", time_cell(b.simulated, u),
                         err_cell(b.error, stated_bound(r.fit->profile.fidelity)));
      }
      o += "</tr>";
    }
  }
  return o + "</table>";
}

}  // namespace

std::string comparison_html(const ReplayResult& r) {
  const replay::MeasuredRun& m = *r.measured;
  std::size_t ok = 0;
  for (const auto& q : m.requests) ok += q.ok;
  const auto css = config::embedded_file("reports/style.css");
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>prima replay: " +
      esc(m.file) + "</title>\n<style>" + std::string(css ? *css : "") +
      "</style>\n</head>\n<body>\n";
  o += "<h1>prima replay: " + esc(r.scenario_name) + "</h1>";
  o += verdict_box(r.comparison, r.fidelity, "Simulated");
  if (r.fit) o += verdict_box(r.fit->comparison, r.fit->profile.fidelity, "Fitted");
  o += "<p>" +
       fmt::format("{} ({}, {} requests, {} completed) replayed on scenario <b>{}</b> ({}, {})",
                   esc(m.file), replay::measured_format_name(m.format), m.requests.size(), ok,
                   esc(r.scenario_name), esc(r.scenario_file), esc(r.gpu)) +
       "</p><div class=\"fidelity" + (r.fidelity.calibrated ? "" : " uncalibrated") +
       "\">Calibration: " + esc(r.fidelity.summary()) + "</div>";
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
  o += "<p class=\"note\">error = (simulated &minus; measured) / measured; green: within the "
       "stated error (10% when none is stated), amber: within twice it, red: beyond. "
       "Percentiles interpolate between ranks.</p>";
  o += table(r);
  o += "<h2>Distributions</h2><p class=\"note\">CDFs of completed requests (ITL: every gap "
       "between tokens; a simulated request without recorded gaps counts its TPOT per gap). The "
       "x axis ends at 1.1&times; the largest p99.</p><div class=\"charts\">";
  const char* titles[] = {"TTFT", "TPOT", "ITL", "E2E", "queue"};
  std::string missing;
  for (int mi = 0; mi < replay::kNumMetrics; ++mi) {
    const auto metric = static_cast<replay::Metric>(mi);
    if (r.measured_samples.of(metric).empty()) {  // nothing measured: no chart to compare
      missing += std::string(missing.empty() ? "" : ", ") + titles[mi];
      continue;
    }
    std::vector<Series> s = {{"measured", "#1f77b4", "", r.measured_samples.of(metric)},
                             {"simulated", "#d62728", "", r.simulated_samples.of(metric)}};
    if (r.fit) s.push_back({"fitted", "#2ca02c", "6 3", r.fit->samples.of(metric)});
    o += cdf_svg(titles[mi], std::move(s));
  }
  o += "</div>";
  if (!missing.empty())
    o += "<p class=\"note\">Not in the measured run, so not compared: " + missing + ".</p>";
  return o +
         "<p class=\"muted\">Generated by prima replay. Self-contained: no network needed."
         "</p>\n</body>\n</html>\n";
}

}  // namespace prima::cli
