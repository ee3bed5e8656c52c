"""Two simulate runs on one page (`prima report BEFORE AFTER`): an incident and its mitigation,
a baseline and a change, two plan candidates. The effect first (what changed, by how much, in
the direction that matters), then each run's verdict side by side, what differs in their
set-ups, and every timeline with both runs on one chart: the same time axis, the same y
scale, the fault windows of both shaded."""

import json

from report_charts import timeline_chart
from report_common import COLORS, dur, esc, fmt, fmt_int, get, num, page, pct
from report_simulate import Run, timeline_panels, unchartable
from report_verdict import slo_met

# (label, getter, kind): kind "lower" (lower is better), "higher", or "info".
FIGURES = [
    ("requests failed", lambda r: get(r, "requests", "failed"), "lower", "count"),
    ("requests rejected", lambda r: get(r, "requests", "rejected"), "lower", "count"),
    ("SLO attainment", lambda r: get(r, "slo", "attainment"), "higher", "share"),
    ("goodput (req/s)", lambda r: get(r, "slo", "goodput_rps"), "higher", "rate"),
    ("TTFT p99", lambda r: get(r, "latency_s", "ttft", "p99"), "lower", "time"),
    ("TPOT p99", lambda r: get(r, "latency_s", "tpot", "p99"), "lower", "time"),
    ("E2E p99", lambda r: get(r, "latency_s", "e2e", "p99"), "lower", "time"),
    ("E2E p50", lambda r: get(r, "latency_s", "e2e", "p50"), "lower", "time"),
    ("output tokens/s", lambda r: get(r, "throughput", "output_tokens_per_s"), "higher", "rate"),
    ("GPUs", lambda r: get(r, "gpus", "count"), "info", "count"),
]


def show(v, unit):
    if unit == "time":
        return dur(v)
    if unit == "share":
        return pct(v)
    if unit == "count":
        return fmt_int(v)
    return fmt(v, ",.0f") if (num(v) or 0) >= 100 else fmt(v, ".3g")


def change(a, b, kind):
    """(text, css class, better?) of a change from a to b."""
    a, b = num(a), num(b)
    if a is None or b is None:
        return "&ndash;", "", None
    if a == b:
        return "same", "", None
    rel = "%+.0f%%" % (100 * (b - a) / a) if a else ("+%s" % fmt(b, "g"))
    better = (b < a) if kind == "lower" else (b > a) if kind == "higher" else None
    cls = "" if better is None else ("ok" if better else "fail")
    return rel, cls, better


def effect_sentences(ra, rb, inc_pairs):
    """The mitigation's effect in words: the figures that moved, incidents first."""
    out = []
    for ia, ib in inc_pairs:
        da, db = dict(ia["phases"]).get("during", {}), dict(ib["phases"]).get("during", {})
        parts = []
        if ia["failed"] or ib["failed"]:
            parts.append("failed requests %s &rarr; %s" % (fmt_int(ia["failed"]),
                                                           fmt_int(ib["failed"])))
        if da.get("e2e_p99") is not None and db.get("e2e_p99") is not None:
            parts.append("E2E p99 of requests arriving during it %s &rarr; %s (%s)" % (
                dur(da["e2e_p99"]), dur(db["e2e_p99"]),
                change(da["e2e_p99"], db["e2e_p99"], "lower")[0]))
        if da.get("attainment") is not None and db.get("attainment") is not None:
            parts.append("SLO attainment during it %s &rarr; %s" % (pct(da["attainment"]),
                                                                    pct(db["attainment"])))
        rec = lambda i: ("%s after it ended" % dur(i["recovered"] - i["end"])  # noqa: E731
                         if i["recovered"] is not None else "not recovered")
        parts.append("recovery %s &rarr; %s" % (rec(ia), rec(ib)))
        out.append("<b>%s</b>: %s." % (esc(ia["fault"]), "; ".join(parts)))
    moved = []
    for label, getter, kind, unit in FIGURES:
        a, b = getter(ra), getter(rb)
        text, _, better = change(a, b, kind)
        if better is not None and num(a) and num(b) is not None and \
                abs(num(b) - num(a)) / abs(num(a)) >= 0.05:
            moved.append("%s %s &rarr; %s (%s)" % (label, show(a, unit), show(b, unit), text))
        elif better is not None and num(a) == 0 and num(b):
            moved.append("%s %s &rarr; %s" % (label, show(a, unit), show(b, unit)))
    out.append("Over the whole run: %s." % ("; ".join(moved) if moved else
                                            "no figure moved by 5% or more"))
    return out


def setup_differences(ra, rb):
    """The set-up keys (model, cluster, deployment, scheduler, fidelity) that differ."""
    out = []

    def walk(prefix, a, b):
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a.keys()) + [k for k in b.keys() if k not in a]:
                if k in ("per_gpu", "pools"):
                    continue
                walk(prefix + "." + k if prefix else k, a.get(k), b.get(k))
        elif a != b and not isinstance(a, (dict, list)) and not isinstance(b, (dict, list)):
            out.append((prefix, a, b))
    for key in ("model", "topology", "deployment"):
        walk(key, ra.get(key), rb.get(key))
    walk("engine", get(ra, "fidelity", "engine"), get(rb, "fidelity", "engine"))
    walk("failover.health_checks", get(ra, "failover", "health_checks"),
         get(rb, "failover", "health_checks"))
    walk("workload", get(ra, "workload", "spec"), get(rb, "workload", "spec"))
    walk("slo", get(ra, "slo", "bounds"), get(rb, "slo", "bounds"))
    fa = ra.get("faults") if isinstance(ra.get("faults"), list) else []
    fb = rb.get("faults") if isinstance(rb.get("faults"), list) else []
    for k in range(max(len(fa), len(fb))):
        x = fa[k] if k < len(fa) else None
        y = fb[k] if k < len(fb) else None
        name = (x or y or {}).get("name") or (x or y or {}).get("type") or "#%d" % k
        if x is None or y is None:
            out.append(("fault %s" % name, "none" if x is None else "present",
                        "none" if y is None else "present"))
        else:
            walk("fault %s" % name, flatten_lists(x), flatten_lists(y))
    return out


def flatten_lists(d):
    """A fault spec with its lists as strings (a temperature profile compares as one value)."""
    if isinstance(d, dict):
        return {k: flatten_lists(v) for k, v in d.items()}
    if isinstance(d, list):
        return json.dumps(d)
    return d


def moved(a, b, share=0.05):
    """Whether a figure changed by at least `share` of its value (any change from 0)."""
    a, b = num(a), num(b)
    if a is None or b is None:
        return False
    return b != a if a == 0 else abs(b - a) / abs(a) >= share


def overall(ra, rb):
    """(css class, headline) of a comparison. It helps when the SLO is met where it was missed,
    fewer requests fail, SLO attainment rises by 5 points or more, or (none of those getting
    worse) a p99 latency falls by 10% or more with no p99 rising that much; it makes things
    worse in the mirror cases; otherwise it has little effect."""
    met_a, met_b = slo_met(ra), slo_met(rb)
    fail_a = num(get(ra, "requests", "failed")) or 0
    fail_b = num(get(rb, "requests", "failed")) or 0
    att_a, att_b = num(get(ra, "slo", "attainment")), num(get(rb, "slo", "attainment"))
    d_att = (att_b - att_a) if att_a is not None and att_b is not None else 0
    lat = [(num(get(ra, "latency_s", k, "p99")), num(get(rb, "latency_s", k, "p99")))
           for k in ("ttft", "tpot", "e2e")]
    faster = any(x and y is not None and y <= 0.9 * x for x, y in lat)
    slower = any(x and y is not None and y >= 1.1 * x for x, y in lat)
    worse = (met_a and met_b is False) or fail_b > fail_a or d_att <= -0.05
    better = (met_b and met_a is False) or fail_b < fail_a or d_att >= 0.05
    if better and not worse:
        return "ok", "The change helps" + ("" if met_b is not False else " (SLO still missed)")
    if worse and not better:
        return "fail", "The change makes it worse"
    if not better and not worse:
        if faster and not slower:
            return "ok", "The change helps"
        if slower and not faster:
            return "fail", "The change makes it worse"
    return "mixed", "The change has mixed or little effect"


def verdict_cell(run):
    met = slo_met(run.report)
    word = {True: "SLO met", False: "SLO missed", None: "no SLO"}[met]
    return '<span class="%s">%s</span> (%s)' % (
        {True: "good", False: "bad", None: ""}[met], word,
        pct(get(run.report, "slo", "attainment")))


def render_compare(plt, dir_a, dir_b):
    a, b = Run(dir_a), Run(dir_b)
    ra, rb = a.report, b.report
    inc_pairs = list(zip(a.incidents, b.incidents))
    body = ["<h1>prima report: %s &rarr; %s</h1>" % (esc(a.name), esc(b.name))]
    desc = []
    for tag, run in (("Before", a), ("After", b)):
        desc.append("<p><b>%s</b> (<code>%s</code>): %s</p>" % (
            tag, esc(run.dir), esc(run.description or run.name)))
    body.extend(desc)

    # The effect, stated.
    better = worse = 0
    rows = []
    for label, getter, kind, unit in FIGURES:
        va, vb = getter(ra), getter(rb)
        text, cls, good = change(va, vb, kind)
        better += good is True
        worse += good is False
        rows.append('<tr data-figure="%s"><td>%s</td><td>%s</td><td>%s</td><td class="%s">%s'
                    "</td></tr>" % (esc(label), label, show(va, unit), show(vb, unit), cls, text))
    cls, head = overall(ra, rb)
    head += ": %s &rarr; %s" % (verdict_cell(a), verdict_cell(b))
    costs = ["%s %s &rarr; %s" % (label, show(getter(ra), unit), show(getter(rb), unit))
             for label, getter, kind, unit in FIGURES
             if change(getter(ra), getter(rb), kind)[2] is False and moved(getter(ra), getter(rb))]
    if cls == "ok" and costs:
        head += ' <span class="muted">(at a cost: %s)</span>' % "; ".join(costs)
    body.append('<div class="verdict %s compare" id="verdict" data-better="%d" data-worse="%d">'
                "<h2>%s</h2>%s<table><tr><th></th><th>before</th><th>after</th><th>change</th>"
                "</tr>%s</table></div>" % (
                    cls, better, worse, head,
                    "".join("<p>%s</p>" % s for s in effect_sentences(ra, rb, inc_pairs)),
                    "".join(rows)))
    diffs = setup_differences(ra, rb)
    if diffs:
        body.append("<h2>What differs</h2><table><tr><th>setting</th><th>before</th>"
                    "<th>after</th></tr>%s</table>" % "".join(
                        "<tr><td>%s</td><td>%s</td><td>%s</td></tr>" % (
                            esc(k), esc(x if x is not None else "unset"),
                            esc(y if y is not None else "unset")) for k, x, y in diffs))
    else:
        body.append('<p class="note">Same set-up as far as report.json tells (model, cluster, '
                    "deployment, engine, workload, SLO).</p>")

    # Timelines: both runs on each chart, one time axis, one y scale.
    panels_b = {p[0]: p for p in timeline_panels(b)}
    t_max = max(x for x in (a.t_end, b.t_end, 1) if x is not None)
    charts, flat = [], []
    for key, title, ylabel, series, hlines, share in timeline_panels(a):
        other = panels_b.get(key)
        if other is None:
            continue
        merged, styles = [], {}
        for k, ((lab, ys), (_, ys_b)) in enumerate(zip(series, other[3])):
            color = COLORS[k % len(COLORS)]
            styles["%s, before" % lab] = (color, "-", 0.45)
            styles["%s, after" % lab] = (color, "--", 1.0)
            na, nb = unchartable(lab, ys, share), unchartable(lab, ys_b, share)
            if na and nb:
                flat.append(na if na == nb else "%s (before), %s (after)" % (na, nb))
                continue
            merged.append(("%s, before" % lab, pad(ys, len(a.t), t_max)))
            merged.append(("%s, after" % lab, pad(ys_b, len(b.t), t_max)))
        t = list(range(1, int(t_max) + 1))
        chart = timeline_chart(plt, t, [(lab, ys[:len(t)]) for lab, ys in merged], ylabel,
                               a.windows + [w for w in b.windows if w not in a.windows], title,
                               hlines=hlines, share=share, x_max=t_max, styles=styles)
        if chart:
            charts.append(chart)
    if charts:
        body.append("<h2>Timelines, before and after</h2>")
        if flat:
            body.append('<p class="note">Not charted (no change, or under 2%% throughout): %s.</p>'
                        % "; ".join(sorted(set(flat))))
        body.extend(charts)
    return page("prima report: %s vs %s" % (a.name, b.name), body)


def pad(ys, n, t_max):
    """A per-second series extended with None to t_max seconds."""
    out = list(ys[:n])
    out += [None] * (int(t_max) - len(out))
    return out
