// Self-contained HTML reports. `prima simulate --html` and `prima report DIR` write
// DIR/report.html with the renderer embedded in the binary (reports/render.py, matplotlib).
// matplotlib is required (scripts/setup.sh installs python3-matplotlib): without it these
// tests fail and the failure message carries the install hint; they never skip.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fmt1(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string fmt2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// 1011 -> "1,011", as the report writes counts.
std::string with_commas(long long v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// Self-contained: nothing is fetched from the network (no URL at all, so no src/href to one),
// and the charts (when there are any) are inline.
void expect_self_contained(const std::string& html, bool charts = true) {
  EXPECT_FALSE(contains(html, "http://"));
  EXPECT_FALSE(contains(html, "https://"));
  EXPECT_FALSE(contains(html, "<script src"));
  EXPECT_FALSE(contains(html, "<link"));
  if (charts) {
    EXPECT_TRUE(contains(html, "<svg") || contains(html, "data:image/"));
  }
}

// A fixture under tests/data/reports/ copied to a fresh directory (the renderer writes there).
std::string fixture(const std::string& name) {
  const std::string dir = temp_dir("report_" + name);
  fs::copy(source_path("tests/data/reports/" + name), dir, fs::copy_options::recursive);
  return dir;
}

TEST(Report, SimulateHtmlForAnIncidentIsSelfContainedWithSummaryAndFaultWindows) {
  const std::string dir = temp_dir("report_thermal");
  auto res = run_prima("simulate " + source_path("scenarios/incidents/thermal_clock_drift.json") +
                       " --out " + dir + " --html -q");
  ASSERT_EQ(res.exit_code, 0) << res.err;
  // A render failure is only a warning for simulate: it must not happen here (setup.sh
  // installs python3-matplotlib; the warning names what to install).
  ASSERT_FALSE(contains(res.err, "warning")) << res.err;
  EXPECT_TRUE(contains(res.out, "report.html")) << res.out;
  ASSERT_TRUE(fs::exists(dir + "/report.html")) << res.err;
  const std::string html = read_file(dir + "/report.html");
  const json r = read_json(dir + "/report.json");
  expect_self_contained(html);
  EXPECT_TRUE(contains(html, "<svg"));
  // Header and summary numbers from report.json.
  EXPECT_TRUE(contains(html, r["scenario"].get<std::string>()));
  EXPECT_TRUE(contains(html, r["model"]["name"].get<std::string>()));
  EXPECT_TRUE(
      contains(html, "<td>" + with_commas(r["requests"]["completed"].get<long long>()) + "</td>"));
  EXPECT_TRUE(
      contains(html, "<td>" + with_commas(r["requests"]["submitted"].get<long long>()) + "</td>"));
  // The verdict first: the SLO missed (the thermal incident), with report.json's attainment;
  // the incident's own verdict beside it. tests/reports/report_pages_test.py reads the page's
  // DOM in detail.
  EXPECT_TRUE(contains(html, "<div class=\"verdict fail\" id=\"verdict\" data-met=\"false\""));
  EXPECT_LT(html.find("id=\"verdict\""), html.find("<h2>Summary</h2>"));
  EXPECT_TRUE(contains(html, fmt1(100 * r["slo"]["attainment"].get<double>()) + "%"));
  EXPECT_TRUE(contains(html, fmt2(r["slo"]["goodput_rps"].get<double>())));
  // Latency CDFs and the timelines, fault columns included (replicas and links are constant
  // or under 2% here: stated in words, not drawn).
  for (const char* s : {"TTFT CDF", "E2E latency CDF", "Requests running and waiting",
                        "GPU utilization", "Temperatures", "Retransmit rate"})
    EXPECT_TRUE(contains(html, s)) << s;
  EXPECT_TRUE(contains(html, "replicas up: 1 throughout"));
  // The incident: its verdict (onset, recovery, phases) and its label on the charts.
  ASSERT_EQ(r["incidents"].size(), 1u);
  const json& inc = r["incidents"][0];
  const std::string label = inc["fault"].get<std::string>();
  EXPECT_TRUE(contains(html, "<div class=\"verdict fail incident\" data-failed=\"0\""));
  EXPECT_TRUE(contains(html, "at 120 s, lasting 90 s"));
  EXPECT_TRUE(contains(html, "<td>during</td>"));
  // Shaded and labelled on every timeline (at least 7 of them), plus the "Shaded" line.
  size_t n = 0;
  for (size_t p = html.find(">" + label + "<"); p != std::string::npos;
       p = html.find(">" + label + "<", p + 1))
    ++n;
  EXPECT_GE(n, 8u) << label;
  EXPECT_LT(fs::file_size(dir + "/report.html"), 1500u * 1024);
}

TEST(Report, ReportSubcommandRendersASimulateDirDeterministically) {
  const std::string dir = temp_dir("report_golden");
  auto sim = run_prima("simulate " + source_path("tests/data/cli/golden_small.json") + " --out " +
                       dir + " -q");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto res = run_prima("report " + dir);
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_TRUE(contains(res.out, dir + "/report.html")) << res.out;
  const std::string first = read_file(dir + "/report.html");
  expect_self_contained(first);
  EXPECT_TRUE(contains(first, "golden_small"));
  EXPECT_FALSE(contains(first, "verdict fail incident"));  // no faults, no incident verdict
  EXPECT_FALSE(contains(first, "verdict ok incident"));
  EXPECT_FALSE(contains(first, "Temperatures"));
  EXPECT_TRUE(contains(first, "By priority"));  // high and normal classes
  ASSERT_EQ(run_prima("report " + dir + " --kind simulate").exit_code, 0);
  EXPECT_EQ(read_file(dir + "/report.html"), first);
}

TEST(Report, PlanRendersTheRankedTableCurvesAndParetoFront) {
  const std::string dir = fixture("plan_ok");
  auto res = run_prima("report " + dir);  // plan.json present: kind plan
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const std::string html = read_file(dir + "/report.html");
  expect_self_contained(html);
  EXPECT_TRUE(contains(html, "fixture_plan_70b"));
  EXPECT_TRUE(contains(html, "Ranked configurations"));
  for (const char* h : {"highest rate meeting the SLO (req/s)", "goodput per GPU (req/s)",
                        "$ per million output tokens"})
    EXPECT_TRUE(contains(html, h)) << h;
  // Configurations in words, GPU counts that add up; the planner's label as a tooltip.
  EXPECT_TRUE(contains(html, ">2 replicas × TP4 on a100 (8 GPUs)<"));
  EXPECT_TRUE(contains(html, "title=\"TP4 PP1 x2 gpu=a100\""));
  // The question under the title.
  EXPECT_TRUE(
      contains(html, "within TTFT p99 &le; 500 ms, E2E p99 &le; 20 s, for 99% of requests?"));
  // It leads with the answer (before the tables), which is the ranking's first row; the rerun
  // overrides are folded away.
  const std::string answer = "4 replicas × TP2 × PP2 on h100 (16 GPUs)";
  EXPECT_TRUE(contains(html, "Recommended: <span title=\"TP2 PP2 x4 gpu=h100\">" + answer));
  EXPECT_LT(html.find("Recommended: "), html.find("Ranked configurations"));
  const auto first_row = html.find("<td>1</td>", html.find("Ranked configurations"));
  ASSERT_NE(first_row, std::string::npos);
  EXPECT_EQ(html.find(answer, first_row), html.find(answer, html.find("Ranked configurations")));
  EXPECT_TRUE(contains(html, "Row 1 is the recommendation"));
  EXPECT_TRUE(contains(html, "It won on goodput per GPU"));
  EXPECT_TRUE(contains(html, "Runner-up: "));
  EXPECT_TRUE(contains(html, "<details><summary>command</summary>"));
  EXPECT_TRUE(contains(html, "<td>0.620</td>"));  // best goodput_per_gpu (TP2 PP2 x4 h100)
  EXPECT_TRUE(contains(html, "Achieved goodput vs offered rate"));
  EXPECT_TRUE(contains(html, "E2E p99 latency vs offered rate"));
  EXPECT_TRUE(contains(html, "SLO 20"));  // the SLO line
  EXPECT_TRUE(contains(html, "Pareto front"));
  EXPECT_TRUE(contains(html, "64 attention heads not divisible by TP3"));  // pruned, with reason
  EXPECT_FALSE(contains(html, "No configuration meets the SLO"));
}

TEST(Report, PlanWithNothingRankedSaysSoAndShowsTheClosest) {
  const std::string dir = fixture("plan_none");
  auto res = run_prima("report " + dir + " --kind plan");
  ASSERT_EQ(res.exit_code, 0) << res.err;
  const std::string html = read_file(dir + "/report.html");
  expect_self_contained(html, /*charts=*/false);  // no results.jsonl, nothing ranked: no chart
  EXPECT_TRUE(contains(html, "No configuration meets the SLO"));
  EXPECT_TRUE(contains(html, "closest candidates"));
  EXPECT_TRUE(contains(html, "1 replica × TP8 (8 GPUs)"));
  EXPECT_TRUE(contains(html, "71% of requests met every bound, 99% asked"));
  EXPECT_TRUE(contains(html, "does not fit in HBM"));
  EXPECT_FALSE(contains(html, "Ranked configurations"));
}

TEST(Report, BadInputExitsTwoWithAMessage) {
  auto r = run_prima("report /nonexistent/prima_dir");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "no such directory")) << r.err;

  const std::string empty = temp_dir("report_empty");
  r = run_prima("report " + empty);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "report.json")) << r.err;
  r = run_prima("report " + empty + " --kind simulate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "report.json")) << r.err;
  r = run_prima("report " + empty + " --kind plan");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "plan.json")) << r.err;
  r = run_prima("report " + empty + " --kind bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "expected simulate or plan")) << r.err;
  r = run_prima("report");
  EXPECT_EQ(r.exit_code, 2);

  const std::string bad = fixture("bad_json");
  r = run_prima("report " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "malformed JSON")) << r.err;
  EXPECT_FALSE(fs::exists(bad + "/report.html"));

  r = run_prima("simulate --no-files --html");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Report, MissingMatplotlibNamesWhatToInstall) {
  // A matplotlib that fails to import, first on the path of every interpreter tried.
  const std::string fake = temp_dir("report_fake_mpl");
  fs::create_directories(fake + "/matplotlib");
  std::ofstream(fake + "/matplotlib/__init__.py") << "raise ImportError('hidden by the test')\n";
  const std::string dir = fixture("plan_ok");
  ::setenv("PYTHONPATH", fake.c_str(), 1);
  auto r = run_prima("report " + dir);
  auto sim = run_prima("simulate " + source_path("tests/data/cli/golden_small.json") + " --out " +
                       dir + "/sim -q --html");
  ::unsetenv("PYTHONPATH");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "install python3-matplotlib (scripts/setup.sh does)")) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/report.html"));
  // For simulate it is a warning: the run's files are written, the exit code unchanged.
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_TRUE(contains(sim.err, "warning")) << sim.err;
  EXPECT_TRUE(contains(sim.err, "install python3-matplotlib")) << sim.err;
  EXPECT_TRUE(fs::exists(dir + "/sim/report.json"));
  EXPECT_FALSE(fs::exists(dir + "/sim/report.html"));
}

}  // namespace
}  // namespace prima::testing
