"""The plan page's charts: goodput and latency against the offered rate (only when rates were
swept), throughput per GPU against interactivity, and cost against goodput, each with
distinguishable series and a `data-series` attribute per chart (as report_charts.py)."""

import textwrap

from report_charts import chart_div
from report_common import COLORS, dur, fmt, get, num, table
from report_plan_words import (LATENCIES, LINE_STYLES, MARKERS, MAX_CURVES, dicts, ident,
                               metrics_of, share_words)


def latency_scale(values):
    """(scale, unit): ms below a second, seconds above."""
    return (1.0, "s") if values and max(values) >= 1.0 else (1e3, "ms")


def rate_charts(plt, results, rows, namer, bounds, att, rank_of):
    """Goodput, latency and attainment against the offered rate, per configuration, when some
    configuration was simulated at more than one rate; else one line saying why there are none."""
    series = {}
    for r in results:
        rate = num(r.get("rate_rps"))
        if rate is not None:
            series.setdefault(ident(r), []).append((rate, r))
    swept = {k for k, pts in series.items() if len({p[0] for p in pts}) > 1}
    if not swept:
        if not series:
            return []
        rates = sorted({p[0] for pts in series.values() for p in pts})
        return ['<p class="muted">Each configuration was simulated at one rate (%s req/s), so '
                'there are no curves against the offered rate.</p>' % ", ".join(
                    fmt(x, "g") for x in rates[:5])]
    labels = ([ident(r) for r in rows if ident(r) in swept][:MAX_CURVES] or
              sorted(swept)[:MAX_CURVES])

    def label_of(key):
        pts = series[key]
        n = rank_of.get(key)
        return ("#%d " % n if n else "") + namer.words(pts[0][1])

    panels = [("goodput (req/s)", "goodput_rps", None, "Achieved goodput vs offered rate")]
    for k, label in LATENCIES:
        if bounds[k] or k != "tpot":
            panels.append(("%s p99" % label, k + "_p99_s", bounds[k],
                           ("E2E p99 latency vs offered rate" if k == "e2e"
                            else "%s p99 vs offered rate" % label)))
    panels.append(("SLO attainment", "attainment", att, "SLO attainment vs offered rate"))
    charts = []
    for ylabel, field, bound, title in panels:
        data = []
        for key in labels:
            pts = sorted(series[key], key=lambda p: p[0])
            pts = [(x, metrics_of(r).get(field), r) for x, r in pts]
            pts = [p for p in pts if p[1] is not None]
            if pts:
                data.append((key, pts))
        all_y = [p[1] for _, pts in data for p in pts]
        if not all_y or max(all_y) - min(all_y) <= 1e-9 * max(1.0, abs(max(all_y))):
            continue  # nothing to see: every value the same
        latency = field.endswith("_p99_s")
        scale, unit = latency_scale(all_y + ([bound] if bound else [])) if latency else (1.0, "")
        fig, ax = plt.subplots(figsize=(9, 3))
        drawn, max_rate = [], 0.0
        for k, (key, pts) in enumerate(data):
            xs, ys = [p[0] for p in pts], [p[1] * scale for p in pts]
            ok = [p[2].get("meets_slo", p[2].get("meets")) is not False for p in pts]
            color, marker = COLORS[k % len(COLORS)], MARKERS[k % len(MARKERS)]
            ax.plot(xs, ys, lw=1.2, color=color, ls=LINE_STYLES[k % len(LINE_STYLES)],
                    marker=marker, ms=4, mfc="none", alpha=0.9,
                    label=textwrap.fill(label_of(key), 58, subsequent_indent="    "))
            ax.scatter([x for x, o in zip(xs, ok) if o], [y for y, o in zip(ys, ok) if o],
                       s=18, color=color, marker=marker, zorder=3)
            max_rate = max(max_rate, xs[-1])
            drawn.append((label_of(key), ys))
        if field == "goodput_rps":
            ax.plot([0, max_rate], [0, max_rate], color="#999", ls=":", lw=1,
                    label="goodput = offered")
        if bound is not None:
            ax.axhline(bound * scale, color="#d62728", ls="--", lw=1,
                       label=("SLO " + dur(bound)) if latency else "SLO %s" % share_words(bound))
        ys_all = [y for _, ys in drawn for y in ys]
        if latency and min(ys_all) > 0 and max(ys_all) / min(ys_all) > 10:
            ax.set_yscale("log")  # latency explodes past saturation: keep the SLO visible
        ax.set_xlabel("offered rate (req/s)")
        ax.set_ylabel("%s (%s)" % (ylabel, unit) if unit else ylabel)
        ax.set_title(title + " (filled: meets the SLO, hollow: misses it)", loc="left", fontsize=9)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        charts.append(chart_div(plt, fig, drawn))
    if not charts:
        return []
    return ["<h2>Throughput vs offered rate</h2>"] + charts


def annotate_ranks(ax, points):
    """'#3' beside each (x, y, rank) point; points in one place share one label ('#26, #33')."""
    at = {}
    for x, y, n in points:
        if n:
            ranks = at.setdefault((round(x, 6), round(y, 6)), [])
            if n not in ranks:
                ranks.append(n)
    for (x, y), ranks in sorted(at.items()):
        ax.annotate(", ".join("#%d" % n for n in sorted(ranks)), (x, y), xytext=(4, 4),
                    textcoords="offset points", fontsize=7)


def pareto_tokens(plt, plan, results, namer, rank_of):
    """Tokens/s per GPU against tokens/s per user, every simulated point and the front."""
    front = [p for p in dicts(plan.get("pareto"))
             if num(p.get("tokens_per_s_per_user")) is not None
             and num(p.get("tokens_per_s_per_gpu")) is not None]
    ops = []
    for r in results:
        m = metrics_of(r)
        t, tok = m.get("tpot_mean_s"), m.get("output_tokens_per_s")
        g = num(get(r, "config", "gpus"))
        if t and tok is not None and g:
            ops.append((1.0 / t, tok / g, r.get("meets", r.get("meets_slo")) is True))
    xs = [o[0] for o in ops] + [num(p["tokens_per_s_per_user"]) for p in front]
    ys = [o[1] for o in ops] + [num(p["tokens_per_s_per_gpu"]) for p in front]
    if len(set(round(x, 9) for x in xs)) < 2 or len(set(round(y, 9) for y in ys)) < 2:
        return []  # one point, or a line: no chart
    fig, ax = plt.subplots(figsize=(7, 3.6))
    drawn = []
    for met, label, face in ((True, "meets the SLO", "#999"), (False, "misses the SLO", "none")):
        sel = [o for o in ops if o[2] == met]
        if sel:
            ax.scatter([o[0] for o in sel], [o[1] for o in sel], s=14, facecolors=face,
                       edgecolors="#999", label=label)
            drawn.append((label, [o[1] for o in sel]))
    if front:
        fx = [num(p["tokens_per_s_per_user"]) for p in front]
        fy = [num(p["tokens_per_s_per_gpu"]) for p in front]
        ax.plot(fx, fy, "-o", ms=5, lw=1.2, color=COLORS[0], label="Pareto front (meets the SLO)")
        drawn.append(("Pareto front", fy))
        annotate_ranks(ax, [(x, y, rank_of.get(ident(p))) for p, x, y in zip(front, fx, fy)])
    ax.set_xlabel("output tokens/s per user (1 / mean TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title("Throughput per GPU vs interactivity (#n: rank in the ranking)", loc="left",
                 fontsize=9)
    ax.legend(loc="upper right", fontsize=7)
    out = ["<h2>Pareto front: tokens/s per GPU vs tokens/s per user</h2>",
           chart_div(plt, fig, drawn)]
    if front:
        rates = {num(p.get("rate_rps")) for p in front}
        one = len(rates) == 1
        out.append(table(["rank", "configuration"] + ([] if one else ["rate (req/s)"]) +
                         ["tokens/s per user", "tokens/s per GPU"],
                         [[str(rank_of.get(ident(p), "&ndash;")), namer.cell(p)] +
                          ([] if one else [fmt(p.get("rate_rps"), ".3g")]) +
                          [fmt(p.get("tokens_per_s_per_user"), ".1f"),
                           fmt(p.get("tokens_per_s_per_gpu"), ".1f")] for p in front], "pareto"))
    return out


def pareto_front(points):
    """points: [(cost, goodput, label)]; the ones no other point beats on both (lower cost,
    higher goodput), sorted by cost."""
    front = []
    for c, g, lab in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or g > front[-1][1]:
            front.append((c, g, lab))
    return front


def pareto_cost(plt, rows, namer):
    """Cost per million tokens against goodput per GPU over the ranked configurations."""
    pts = []
    for k, r in enumerate(rows):
        c, g = num(r.get("cost_per_million_tokens")), num(r.get("goodput_per_gpu"))
        if c is not None and g is not None:
            pts.append((c, g, k + 1))
    if len({round(p[0], 9) for p in pts}) < 2 or len({round(p[1], 9) for p in pts}) < 2:
        return []
    front = pareto_front(pts)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, color="#999",
               label="ranked configurations")
    ax.plot([p[0] for p in front], [p[1] for p in front], "-o", ms=5, lw=1.2,
            color=COLORS[0], label="Pareto front")
    annotate_ranks(ax, front)
    ax.set_xlabel("$ per million output tokens")
    ax.set_ylabel("goodput per GPU (req/s)")
    ax.set_title("Cost vs goodput (#n: rank in the ranking)", loc="left", fontsize=9)
    ax.legend(loc="lower right")
    return ["<h2>Pareto front: cost vs goodput</h2>",
            chart_div(plt, fig, [("ranked", [p[1] for p in pts]),
                                 ("front", [p[1] for p in front])]),
            table(["rank", "configuration", "$ per million output tokens",
                   "goodput per GPU (req/s)"],
                  [[str(n), namer.cell(rows[n - 1]), fmt(c, ".3f"), fmt(g, ".3f")]
                   for c, g, n in front], "pareto")]
