#!/usr/bin/env python3
"""The `prima plan` page (reports/report_plan.py), checked on its DOM.

    /usr/bin/python3 tests/reports/plan_page_test.py

Renders copies of the fixtures under tests/data/reports/ (plan_target: a fixed-rate plan with a
target, trimmed from a real `prima plan scenarios/plans/pools_mixed_gpus.json` run; plan_ok,
plan_none: hand-made) with reports/render.py, parses report.html and checks what a reader
decides with: the answer is the ranking's first row, the order is stated, failures say which
bound and by how much, pruned reasons are grouped, no rate-sweep chart at a fixed rate, a margin
within the model's error is flagged. Needs a python3 with matplotlib (the renderer's one
dependency): $PRIMA_PYTHON, else this interpreter or /usr/bin/python3; exits 77 (a skip) when
none has it."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dom  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RENDER = os.path.join(ROOT, "reports", "render.py")
DATA = os.path.join(ROOT, "tests", "data", "reports")
SIGNED_PCT = re.compile("[+\u2212-][0-9]+(\\.[0-9]+)?%")
SIGNED_POINTS = re.compile("[+\u2212-][0-9]+(\\.[0-9]+)? points")


# ----------------------------------------------------------------------------- the renderer

def has_matplotlib(exe):
    """Whether `exe` runs and can import matplotlib; the reason when it cannot."""
    try:
        r = subprocess.run([exe, "-c", "import matplotlib"], capture_output=True, text=True,
                           timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return False, str(e)
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        return False, lines[-1] if lines else "exit %d" % r.returncode
    return True, ""


def find_python():
    """The interpreter to run render.py with, chosen as prima does: $PRIMA_PYTHON alone when
    set, else the first of this interpreter and /usr/bin/python3 that can import matplotlib (a
    pyenv/venv python3 first on PATH often lacks the apt-installed one). (path, None), or
    (None, why) when none can."""
    env = os.environ.get("PRIMA_PYTHON")
    candidates = [env] if env else [c for c in (sys.executable, "/usr/bin/python3") if c]
    why = []
    for exe in dict.fromkeys(candidates):
        ok, reason = has_matplotlib(exe)
        if ok:
            return exe, None
        why.append("%s%s: %s" % ("PRIMA_PYTHON=" if env else "", exe, reason))
    return None, "no python3 with matplotlib to run reports/render.py (%s)" % "; ".join(why)


PYTHON = None


def setUpModule():
    global PYTHON
    if PYTHON is None:
        PYTHON, why = find_python()
        if PYTHON is None:
            raise unittest.SkipTest(why)


# ----------------------------------------------------------------------------- rendering

class Rendered:
    def __init__(self, fixture, edit=None, edit_results=None):
        self.tmp = tempfile.mkdtemp(prefix="plan_page_")
        d = os.path.join(self.tmp, fixture)
        shutil.copytree(os.path.join(DATA, fixture), d)
        if edit_results is not None:
            path = os.path.join(d, "results.jsonl")
            with open(path, encoding="utf-8") as f:
                lines = [json.loads(x) for x in f if x.startswith("{")]
            with open(path, "w", encoding="utf-8") as f:
                for x in lines:
                    edit_results(x)
                    f.write(json.dumps(x) + "\n")
        with open(os.path.join(d, "plan.json"), encoding="utf-8") as f:
            self.plan = json.load(f)
        if edit is not None:
            plan = copy.deepcopy(self.plan)
            edit(plan)
            with open(os.path.join(d, "plan.json"), "w", encoding="utf-8") as f:
                json.dump(plan, f)
            self.plan = plan
        r = subprocess.run([PYTHON, RENDER, "plan", d], capture_output=True, text=True,
                           cwd=self.tmp, timeout=300)
        if r.returncode != 0:
            raise AssertionError("render.py plan %s: exit %d: %s" % (fixture, r.returncode,
                                                                     r.stderr))
        with open(os.path.join(d, "report.html"), encoding="utf-8") as f:
            self.html = f.read()
        self.dom = dom.parse(self.html)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def answer(self):
        return self.dom.find("div", "answer")

    def ranked_rows(self):
        t = [n for n in self.dom.find_all("table", "ranked") if not n.inside("details")]
        return t[0].data_rows() if t else []


_cache = {}


def rendered(fixture):
    if fixture not in _cache:
        _cache[fixture] = Rendered(fixture)
    return _cache[fixture]


def title_of(node):
    """The title of the first <span> in `node` (a configuration's planner key)."""
    return node.attr_of("span", "title")


# ----------------------------------------------------------------------------- tests

class AnswerAndRanking(unittest.TestCase):
    def test_fixture_ranks_the_answer_elsewhere(self):
        # The point of the next tests: plan.json's own order does not lead with the answer.
        plan = rendered("plan_target").plan
        self.assertNotEqual(plan["ranked"][0]["key"], plan["target"]["fewest_gpus"]["key"])

    def test_answer_box_names_the_first_ranked_row(self):
        r = rendered("plan_target")
        box = r.answer()
        self.assertIsNotNone(box, "no answer box")
        h2 = box.find("h2")
        self.assertTrue(h2.text().startswith("Answer: "), h2.text())
        rows = r.ranked_rows()
        self.assertGreater(len(rows), 2)
        first = rows[0][1]
        self.assertEqual(title_of(h2), title_of(first))
        self.assertEqual(title_of(first), r.plan["target"]["fewest_gpus"]["key"])
        # The same words, the answer adding the model.
        self.assertTrue(h2.text()[len("Answer: "):].startswith(first.text()),
                        (h2.text(), first.text()))
        self.assertEqual(rows[0][0].text(), "1")

    def test_runner_up_is_the_second_row(self):
        r = rendered("plan_target")
        ps = [p for p in r.answer().find_all("p") if p.text().startswith("Runner-up:")]
        self.assertEqual(len(ps), 1)
        second = r.ranked_rows()[1][1]
        self.assertEqual(title_of(ps[0]), title_of(second))
        self.assertEqual(title_of(second), r.plan["target"]["runner_up"]["key"])

    def test_recommended_is_the_first_ranked_row_without_a_target(self):
        r = rendered("plan_ok")
        h2 = r.answer().find("h2")
        self.assertTrue(h2.text().startswith("Recommended: "), h2.text())
        first = r.ranked_rows()[0]
        self.assertEqual(h2.text()[len("Recommended: "):], first[1].text())
        self.assertEqual(first[3].text(), "7.9")  # TP2 PP2 x4 on h100: plan.json's first

    def test_the_order_is_stated_above_the_ranking(self):
        for fixture, words in (("plan_target", ("fewest GPUs", "cost per hour", "goodput per GPU",
                                                "Row 1 is the answer")),
                               ("plan_ok", ("goodput per GPU", "cost per million output tokens",
                                            "Row 1 is the recommendation"))):
            r = rendered(fixture)
            order = r.dom.find("p", "order")
            self.assertIsNotNone(order, fixture)
            for w in words:
                self.assertIn(w, order.text(), fixture)
            self.assertLess(r.html.index('class="order"'), r.html.index('class="ranked"'))

    def test_configurations_in_words_with_gpu_counts_that_add_up(self):
        r = rendered("plan_target")
        cells = [row[1] for row in r.ranked_rows()] + \
            [row[1] for t in r.dom.find_all("table", "failed") for row in t.data_rows()]
        self.assertGreater(len(cells), 5)
        for c in cells:
            words = c.text()
            # No planner key fragments ("tp4 pp1 x6") in what is read.
            self.assertIsNone(re.search(r"\btp\d|\bx\d|\bpp\d|disagg|\{", words), words)
            m = re.search(r"\((\d+) GPUs?(: ([^)]*))?\)", words)
            self.assertIsNotNone(m, words)
            total = int(m.group(1))
            pools = re.findall(r"(\d+) (?:replicas? )?× TP(\d+)(?: × PP(\d+))?", words)
            self.assertTrue(pools, words)
            self.assertEqual(sum(int(n) * int(t) * int(p or 1) for n, t, p in pools), total, words)
            if m.group(3):  # "4 H200 + 4 H100"
                self.assertEqual(sum(int(x) for x in re.findall(r"(\d+) \S+", m.group(3))), total)
        self.assertIn("prefill 4 × TP1 on H200 + decode 1 × TP4 on H100 "
                      "(8 GPUs: 4 H200 + 4 H100)",
                      [c.text() for c in cells])

    def test_the_question_is_under_the_title(self):
        r = rendered("plan_target")
        q = r.dom.find("p", "question")
        self.assertIsNotNone(q)
        text = q.text()
        for w in ("Llama-3-70B", "FP8", "6 req/s", "fewest GPUs", "TTFT p99 \u2264 2 s",
                  "TPOT p99 \u2264 40 ms", "99% of requests"):
            self.assertIn(w, text)
        self.assertLess(r.html.index("<h1>"), r.html.index('class="question"'))
        self.assertLess(r.html.index('class="question"'), r.html.index('class="answer"'))
        q = rendered("plan_ok").dom.find("p", "question")
        self.assertIn("per GPU", q.text())
        self.assertIn("E2E p99 \u2264 20 s", q.text())


class Failures(unittest.TestCase):
    def test_failures_name_the_bound_and_by_how_much(self):
        r = rendered("plan_target")
        tables = r.dom.find_all("table", "failed")
        self.assertTrue(tables)
        rows = tables[0].data_rows()
        self.assertEqual(len(rows), len(r.plan["failed_slo"]))
        what = [row[-1].text() for row in rows]
        for w in what:  # a latency bound by a signed %, the attainment by signed points
            self.assertRegex(w, SIGNED_PCT if "p99" in w else SIGNED_POINTS)
        self.assertRegex(what[0], SIGNED_POINTS)
        self.assertIn("TTFT p99 2.14 s over the 2 s bound (+6.8%)", what[1])
        self.assertIn("TPOT p99 52.3 ms over the 40 ms bound (+30.7%)", what[2])
        self.assertIn("TTFT p99 20.2 s over the 2 s bound (+909%)", what[3])
        self.assertIn("98.95% of requests met every bound, 99% asked", what[0])
        for t in tables:
            text = t.text()
            self.assertNotIn("{", text)
            self.assertNotIn("'ok'", text)
            self.assertNotIn("True", text)
            self.assertNotIn("slo_distance", text)

    def test_no_raw_dicts_on_the_page(self):
        for fixture in ("plan_target", "plan_ok", "plan_none"):
            body = rendered(fixture).dom.find("body")
            text = body.text(skip=("svg", "code", "style"))
            for bad in ("'ok'", "': ", "slo_distance=", "{'", "True,"):
                self.assertNotIn(bad, text, fixture)

    def test_long_failure_lists_are_folded(self):
        def many(plan):
            plan["failed_slo"] = [dict(f, key="%s #%d" % (f["key"], k))
                                  for k in range(4) for f in plan["failed_slo"]]
        r = Rendered("plan_target", many)
        tables = r.dom.find_all("table", "failed")
        self.assertEqual(len(tables), 2)
        self.assertEqual(len(tables[0].data_rows()), 10)
        self.assertEqual(len([t for t in tables if not t.inside("details")]), 1)
        self.assertEqual(len(tables[1].data_rows()), 6)
        summary = tables[1].parent.find("summary") if tables[1].parent.tag == "details" else None
        self.assertIsNotNone(summary)
        self.assertIn("6 more", summary.text())

    def test_pruned_reasons_are_grouped_with_counts(self):
        r = rendered("plan_target")
        reasons = {}
        for p in r.plan["pruned"]:
            reasons[p["reason"]] = reasons.get(p["reason"], 0) + 1
        self.assertTrue(any(n > 1 for n in reasons.values()), "fixture needs a repeated reason")
        t = r.dom.find("table", "pruned")
        rows = t.data_rows()
        self.assertEqual(len(rows), len(reasons))
        seen = {}
        for row in rows:
            count = int(re.match(r"(\d+) ×", row[0].text()).group(1))
            reason = row[1].text(skip=("span",))
            seen[reason] = count
            items = row[2].find_all("li")
            self.assertEqual(len(items), count)
            self.assertIn("the %d configuration" % count, row[2].find("summary").text())
        self.assertEqual(seen, reasons)
        # Each reason once on the page, most frequent first.
        for reason in reasons:
            self.assertEqual(r.dom.find("body").text().count(reason), 1, reason)
        self.assertEqual([int(re.match(r"\d+", row[0].text()).group(0)) for row in rows],
                         sorted(reasons.values(), reverse=True))


class ChartsAndTrust(unittest.TestCase):
    def test_no_rate_sweep_at_a_fixed_rate(self):
        r = rendered("plan_target")
        self.assertNotIn("vs offered rate", r.html)
        self.assertNotIn("Throughput vs offered rate", r.dom.text())
        muted = [p for p in r.dom.find_all("p", "muted") if "one rate" in p.text()]
        self.assertEqual(len(muted), 1)
        self.assertIn("6 req/s", muted[0].text())
        # With a sweep (plan_ok), the curves are there.
        ok = rendered("plan_ok")
        self.assertIn("Achieved goodput vs offered rate", ok.html)
        self.assertFalse([p for p in ok.dom.find_all("p", "muted") if "one rate" in p.text()])

    def test_no_flat_chart(self):
        for fixture in ("plan_target", "plan_ok"):
            charts = rendered(fixture).dom.find_all("div", "chart")
            self.assertTrue(charts, fixture)
            for c in charts:
                series = [s.rsplit(":", 2) for s in c.attrs.get("data-series", "").split(";") if s]
                self.assertTrue(series, fixture)
                lo = min(float(s[1]) for s in series)
                hi = max(float(s[2]) for s in series)
                self.assertGreater(hi, lo, (fixture, series))
        # A panel whose every value is the same is left out (here: attainment 0.999 throughout).
        self.assertIn("SLO attainment vs offered rate", rendered("plan_ok").html)

        def constant(line):
            line["report"]["slo"]["attainment"] = 0.999
        flat = Rendered("plan_ok", edit_results=constant)
        self.assertNotIn("SLO attainment vs offered rate", flat.html)
        self.assertIn("Achieved goodput vs offered rate", flat.html)

    def test_latency_units(self):
        r = rendered("plan_ok")
        self.assertIn("SLO 20 s", r.html)         # the E2E bound, in seconds
        self.assertIn("SLO 500 ms", r.html)       # the TTFT bound, in milliseconds
        self.assertIsNone(re.search(r"[0-9]{2},[0-9]{3} ms|[0-9]{5,} ms", r.dom.text()))
        # E2E p99 reaches 205 s: the axis is in seconds, not 205,000 ms.
        e2e = [c for c in r.dom.find_all("div", "chart") if "E2E p99 latency vs" in c.text()]
        self.assertEqual(len(e2e), 1)
        self.assertIn("E2E p99 (s)", e2e[0].text())
        self.assertNotIn("(ms)", e2e[0].text())

    def test_a_margin_within_the_stated_error_is_flagged(self):
        r = rendered("plan_target")
        cautions = r.answer().find_all("div", "caution")
        texts = [c.text() for c in cautions]
        # TTFT: 1.68 s of 2 s (15.8% under) on the H200 prefill pool, whose error reaches 22%.
        self.assertTrue(any(t.startswith("The answer's TTFT p99") and "15.8%" in t and "22.0%" in t
                            for t in texts), texts)
        # TPOT: 43% under on the H100 decode pool (TPOT error at most 18.2%): no caution.
        self.assertFalse(any("TPOT" in t for t in texts), texts)

        def precise(plan):  # the H200 profile claimed within 5%: the TTFT margin is clear
            f = plan["fidelity"]["H200-SXM-141GB"]
            f["max_abs_error"] = f["median_abs_error"] = 0.05
            f["by_metric"] = {}
        calm = Rendered("plan_target", precise)
        self.assertFalse([c.text() for c in calm.answer().find_all("div", "caution")
                          if c.text().startswith("The answer's")])

    def test_fidelity_in_words_per_gpu(self):
        r = rendered("plan_target")
        boxes = [d for d in r.dom.find_all("div", "fidelity")]
        self.assertEqual(len(boxes), len(r.plan["fidelity"]))
        for gpu, box in zip(sorted(r.plan["fidelity"]), boxes):
            self.assertIn(gpu, box.text())
            self.assertIn("off by", box.text())
        self.assertLess(r.html.index('class="answer"'), r.html.index('class="fidelity'))
        self.assertLess(r.html.index('class="fidelity'), r.html.index('class="ranked"'))


class Robustness(unittest.TestCase):
    def test_nothing_ranked(self):
        r = rendered("plan_none")
        self.assertIsNone(r.answer())
        self.assertIn("No configuration meets the SLO", r.dom.text())
        rows = r.dom.find("table", "failed").data_rows()
        self.assertEqual(len(rows), 2)
        self.assertIn("71% of requests met every bound", rows[0][-1].text())
        self.assertRegex(rows[0][-1].text(), SIGNED_POINTS)

    def test_partial_plans_render(self):
        def strip(plan):
            for k in ("target", "fidelity", "economics", "pareto", "slo"):
                plan.pop(k, None)
            for e in plan["ranked"]:
                e.pop("config", None)
                e.pop("metrics", None)
            plan["failed_slo"] = [{"key": "k"}, "not an entry", {"config": [1, 2]}]
            plan["pruned"] = [{}, {"reason": None}]
        r = Rendered("plan_target", strip)
        self.assertIsNotNone(r.answer())
        r = Rendered("plan_target", lambda p: p.update(ranked={"bad": 1}, target=[], slo="fast"))
        self.assertIn("No configuration meets the SLO", r.dom.text())

    def test_deterministic_and_self_contained(self):
        a = Rendered("plan_target").html
        self.assertEqual(a, rendered("plan_target").html)
        for bad in ("http://", "https://", "<script", "<link"):
            self.assertNotIn(bad, a)


if __name__ == "__main__":
    PYTHON, WHY = find_python()
    if PYTHON is None:
        print("skipped: " + WHY)
        sys.exit(77)  # ctest's SKIP_RETURN_CODE
    unittest.main(verbosity=2)
