#!/usr/bin/env python3
"""The simulate, incident and comparison pages, read as a browser would: each run is simulated
and rendered by the prima binary (its embedded renderer), the page is parsed into a DOM, and
the assertions are on what a reader sees: the verdict box and its agreement with report.json,
an incident's failed requests and recovery, the comparison's stated effect, and charts that
carry meaning (no constant series, aligned time axes, no negative share axes, readable units).

    python3 tests/reports/report_pages_test.py build/prima
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dom  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRIMA = None
OUT = None
RUNS = {
    "default": None,  # the embedded default scenario
    "thermal": "scenarios/incidents/thermal_clock_drift.json",
    "thermal_fix": "scenarios/incidents/thermal_clock_drift_mitigated.json",
    "node": "scenarios/incidents/node_failure.json",
    "node_fix": "scenarios/incidents/node_failure_mitigated.json",
}


def run(*args):
    p = subprocess.run([PRIMA] + list(args), capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("prima %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p


def setUpModule():
    global OUT
    OUT = tempfile.mkdtemp(prefix="prima_report_pages_")
    for name, scenario in RUNS.items():
        d = os.path.join(OUT, name)
        run("simulate", *([os.path.join(ROOT, scenario)] if scenario else []), "--out", d, "-q")
        run("report", d)
    run("report", os.path.join(OUT, "node"), os.path.join(OUT, "node_fix"))
    run("report", os.path.join(OUT, "thermal"), os.path.join(OUT, "thermal_fix"), "--out",
        os.path.join(OUT, "thermal_compare.html"))
    # The other way round: undoing the fix.
    run("report", os.path.join(OUT, "node_fix"), os.path.join(OUT, "node"), "--out",
        os.path.join(OUT, "node_undone.html"))


def page(name):
    with open(os.path.join(OUT, name) if name.endswith(".html")
              else os.path.join(OUT, name, "report.html"), encoding="utf-8") as f:
        return f.read()


def report(name):
    with open(os.path.join(OUT, name, "report.json"), encoding="utf-8") as f:
        return json.load(f)


def timeline_charts(doc):
    return [c for c in doc.find_all("div", cls="chart") if "data-series" in c.attrs]


class ChartChecks:
    """Charts that carry meaning, on any page."""

    def check_charts(self, html_text):
        doc = dom.parse(html_text)
        charts = timeline_charts(doc)
        self.assertGreater(len(charts), 2)
        sizes = set()
        for c in charts:
            for series in c.attrs["data-series"].split(";"):
                label, lo, hi = series.rsplit(":", 2)
                self.assertNotEqual(lo, hi, "constant series %r drawn" % label)
            svg = c.find("svg")
            sizes.add((svg.attrs.get("width"), svg.attrs.get("height")))
        # One size and fixed margins: the time axes of stacked charts line up.
        self.assertEqual(len(sizes), 1, sizes)
        # Shares never get a negative axis (an all-zero series would draw -4%..4%).
        svgs = "".join(re.findall(r"<svg.*?</svg>", html_text, flags=re.S))
        self.assertIsNone(re.search(r">\s*[-\u2212]\d+%\s*<", svgs))
        # Latencies read in s from 10 s on: no "40,000 ms".
        self.assertIsNone(re.search(r"\d{2},?\d{3}(\.\d+)? ms", html_text))
        # Self-contained: nothing fetched.
        self.assertNotIn("http://", html_text)
        self.assertNotIn("https://", html_text)
        self.assertNotIn("<script", html_text)


class SimulatePage(unittest.TestCase, ChartChecks):
    def test_the_verdict_matches_report_json(self):
        for name in ("default", "thermal", "node"):
            r = report(name)
            doc = dom.parse(page(name))
            box = doc.find("div", cls="verdict", id="verdict")
            self.assertIsNotNone(box, name)
            att, target = r["slo"]["attainment"], r["slo"]["target"]
            self.assertEqual(box.attrs["data-met"], "true" if att >= target else "false", name)
            self.assertAlmostEqual(float(box.attrs["data-attainment"]), att, places=5)
            self.assertAlmostEqual(float(box.attrs["data-target"]), target, places=5)
            self.assertIn("ok" if att >= target else "fail", box.classes)
            head = box.find("h2").text()
            self.assertTrue(head.startswith("SLO met" if att >= target else "SLO missed"), head)
            # One row per bound, judged against the target.
            rows = box.find("table", cls="bounds").find_all("tr")[1:]
            self.assertEqual(sorted(tr.attrs["data-metric"] for tr in rows),
                             sorted(k[:-2] for k in r["slo"]["bounds"]))
            for tr in rows:
                cells = tr.rows()[0]
                p99 = r["latency_s"][tr.attrs["data-metric"]]["p99"]
                bound = r["slo"]["bounds"][tr.attrs["data-metric"] + "_s"]
                if p99 > bound * 1.01:
                    self.assertEqual(cells[-1], "missed", (name, cells))
            text = box.text()
            rate = r["workload"]["spec"]["arrival"]["rate_rps"]
            self.assertIn("Offered load: Poisson arrivals at %g req/s" % rate, text)
            # What limits the run: binding when requests queue, else the closest limit.
            self.assertTrue("Limit that binds:" in text or "Closest limit (nothing queues yet"
                            in text, text)
            self.assertIn("fidelity.md", text)

    def test_the_binding_limit_is_named_and_drawn(self):
        # Thermal drift: the run queues behind the micro-batch cap (16 x PP2 = 32 running).
        r = report("thermal")
        self.assertEqual(r["deployment"]["max_running_per_replica"], 32)
        doc = dom.parse(page("thermal"))
        self.assertIn("batch cap: running requests at the cap (micro-batch 16 × 2 pipeline "
                      "stages = 32 per replica)", doc.find("div", id="verdict").text())
        queue = [c for c in timeline_charts(doc) if "Requests running and waiting" in c.text()]
        # The default scenario does not queue: its stage imbalance is the closest limit, and
        # the stages' busy shares are drawn.
        d = dom.parse(page("default"))
        self.assertIn("Closest limit (nothing queues yet", d.find("div", id="verdict").text())
        self.assertIn("pipeline stage 0", d.find("div", id="verdict").text())
        self.assertIn("GPU busy by pipeline stage", d.text())
        self.assertEqual(len(queue), 1)
        self.assertIn("cap 32", queue[0].text())

    def test_constant_series_are_stated_not_drawn(self):
        doc = dom.parse(page("default"))
        note = [p.text() for p in doc.find_all("p", cls="note") if "Not charted" in p.text()]
        self.assertEqual(len(note), 1)
        self.assertIn("replicas up: 1 throughout", note[0])
        self.assertNotIn("Replicas serving", " ".join(c.text() for c in timeline_charts(doc)))
        # No all-zero failover table: one line instead.
        self.assertIn("Failover: none", doc.text())
        for name in ("default", "thermal", "node"):
            self.check_charts(page(name))

    def test_an_incident_verdict_counts_failed_requests_and_recovery(self):
        r = report("node")
        doc = dom.parse(page("node"))
        box = doc.find("div", cls="incident")
        self.assertIsNotNone(box)
        self.assertGreater(r["requests"]["failed"], 0)
        self.assertEqual(int(box.attrs["data-failed"]), r["requests"]["failed"])
        self.assertIn("fail", box.classes)
        self.assertIn("%s requests failed" % format(r["requests"]["failed"], ","), box.text())
        self.assertIn("A node dies and comes back", box.text() + doc.text())
        phases = box.find("table", cls="phases").rows()
        self.assertEqual([row[0] for row in phases[1:3]], ["before", "during"])
        during = phases[2]
        self.assertGreater(int(during[3].replace(",", "")), 0)  # failures inside the window
        # The thermal incident recovers after its window, and the verdict says when.
        doc = dom.parse(page("thermal"))
        box = doc.find("div", cls="incident")
        rec = float(box.attrs["data-recovered"])
        inc = report("thermal")["incidents"][0]
        self.assertGreaterEqual(rec, inc["end_s"])
        self.assertIn("Recovered:", box.text())
        self.assertIn("recovering", [row[0] for row in box.find("table", cls="phases").rows()])


class ComparePage(unittest.TestCase, ChartChecks):
    def test_the_mitigation_effect_is_stated(self):
        doc = dom.parse(page(os.path.join("node_fix", "compare.html")))
        box = doc.find("div", cls="verdict", id="verdict")
        self.assertIn("ok", box.classes)
        failed = report("node")["requests"]["failed"]
        self.assertIn("failed requests %s → 0" % format(failed, ","), box.text())
        self.assertIn("SLO missed", box.text())
        self.assertIn("SLO met", box.text())
        fig = box.find("tr", data_figure="requests failed").rows()[0]
        self.assertEqual(fig[1:], [format(failed, ","), "0", "-100%"])
        differs = [row for t in doc.find_all("table") for row in t.rows()]
        self.assertIn(["failover.health_checks", "False", "True"], differs)
        self.check_charts(page(os.path.join("node_fix", "compare.html")))

    def test_undoing_the_fix_makes_it_worse(self):
        box = dom.parse(page("node_undone.html")).find("div", id="verdict")
        self.assertIn("fail", box.classes)
        self.assertTrue(box.find("h2").text().startswith("The change makes it worse"))
        fig = box.find("tr", data_figure="requests failed").rows()[0]
        self.assertEqual(fig[1:3], ["0", format(report("node")["requests"]["failed"], ",")])

    def test_charts_share_axes_and_faults_differ(self):
        html_text = page("thermal_compare.html")
        doc = dom.parse(html_text)
        self.assertIn("The change helps", doc.find("div", id="verdict").text())
        self.assertIn("fault CRAC trip.profile", doc.text())
        for c in timeline_charts(doc):
            labels = [s.rsplit(":", 2)[0] for s in c.attrs["data-series"].split(";")]
            # Every drawn figure has its before and after on the same chart.
            stems = {lab.rsplit(", ", 1)[0] for lab in labels}
            for stem in stems:
                self.assertTrue({stem + ", before", stem + ", after"} & set(labels), labels)
        self.check_charts(html_text)

    def test_bad_input(self):
        p = subprocess.run([PRIMA, "report", os.path.join(OUT, "node"), OUT],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no report.json", p.stderr)
        p = subprocess.run([PRIMA, "report", os.path.join(OUT, "node"), "--out", "x.html"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--out applies to a comparison", p.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: report_pages_test.py PRIMA_BINARY")
    PRIMA = os.path.abspath(sys.argv.pop(1))
    unittest.main()
