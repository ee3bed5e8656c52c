"""The `prima simulate` page (report.json, requests.csv, timeline.csv): the verdict first (the
SLO per bound against its target, the offered load, the limit that binds; an incident's onset,
peak, recovery and phases), then the summary tables, latency CDFs and aligned timelines."""

import os

from report_charts import (flat_note, incident_windows, is_flat, moving_average, per_second,
                           percent_formatter, timeline_chart, SMOOTH_S)
from report_common import (BadInput, COLORS, MAX_POINTS, column, dur, esc, fidelity_words, fmt,
                           fmt_int, get, kv_table, margin_caution, num, page, pct, read_csv,
                           read_json_file, stated_error, svg_of, table)
from report_incident import analyse, verdict_html
from report_verdict import (binding_limits, headroom_words, load_words, queued_share, slo_met,
                            slo_rows, slo_target, stage_utilization)


class Run:
    """One simulate output directory, read defensively."""

    def __init__(self, d):
        path = os.path.join(d, "report.json")
        self.dir = d
        self.report = read_json_file(path, "a simulate run's report")
        if not isinstance(self.report, dict):
            raise BadInput("%s: expected a JSON object" % path)
        self.requests = read_csv(os.path.join(d, "requests.csv"))
        self.timeline = read_csv(os.path.join(d, "timeline.csv"))
        self.t = column(self.timeline, "t_s")
        if not all(v is not None for v in self.t):
            self.timeline, self.t = [], []
        self.t_end = num(get(self.report, "simulated_seconds")) or (self.t[-1] if self.t else None)
        self.windows = incident_windows(self.report, self.t_end)
        self.name = get(self.report, "scenario", default="(unnamed)")
        self.description = get(self.report, "workload", "description")
        self.bounds = get(self.report, "slo", "bounds", default={}) or {}
        self.limits = binding_limits(self.report, self.timeline)
        arrivals_end = num(get(self.report, "workload", "duration_s")) or self.t_end
        self.incidents = [a for a in (
            analyse(i, self.requests, self.bounds, arrivals_end)
            for i in (get(self.report, "incidents", default=[]) or []) if isinstance(i, dict))
            if a is not None]

    def col(self, name):
        return column(self.timeline, name)


def slo_verdict(run):
    """The run's verdict box: SLO met or not per bound against its target, the offered load
    and workload, the limit that binds, and how far to trust it."""
    r = run.report
    met = slo_met(r)
    target, source = slo_target(r)
    att = num(get(r, "slo", "attainment"))
    rows = slo_rows(r, run.requests)
    fid = get(r, "fidelity")
    if met is None:
        cls, head = "mixed", "No SLO set: the run is described, not judged"
    elif met:
        cls, head = "ok", "SLO met: %s of requests within every bound (target %s)" % (
            pct(att), pct(target))
    else:
        cls, head = "fail", "SLO missed: %s of requests within every bound (target %s)" % (
            pct(att), pct(target))
    out = ['<div class="verdict %s" id="verdict" data-met="%s" data-attainment="%s" '
           'data-target="%s">' % (cls, {True: "true", False: "false", None: "none"}[met],
                                  fmt(att, ".6g"), fmt(target, ".6g")),
           "<h2>%s</h2>" % head]
    cautions = []
    if rows:
        trs = []
        for b in rows:
            ok = b["met"]
            trs.append('<tr data-metric="%s"><td>%s</td><td>&le; %s</td><td>%s</td>'
                       '<td class="%s">%s</td><td>%s</td><td class="%s">%s</td></tr>' % (
                           b["metric"], b["label"], dur(b["bound"]), dur(b["p99"]),
                           "ok" if ok else "fail", pct(b["within"]),
                           margin_words(b),
                           "ok" if ok else "fail", "met" if ok else "missed"))
            if ok:
                cautions.append(margin_caution("%s p99" % b["label"], b["margin"],
                                               stated_error(fid, b["metric"])))
        out.append("<table class=\"bounds\"><tr><th>bound</th><th>limit</th><th>p99</th>"
                   "<th>requests within</th><th>p99 margin</th><th>verdict</th></tr>%s</table>"
                   % "".join(trs))
        out.append('<p class="note">Target: %s of requests within each bound (%s). Failed and '
                   "rejected requests count as outside.</p>" % (
                       pct(target), "the scenario's slo.attainment" if source == "scenario"
                       else "default; set slo.attainment in the scenario"))
    offered, work = load_words(r, run.requests)
    out.append("<p><b>Offered load:</b> %s. <b>Workload:</b> %s.</p>" % (offered, work))
    queued = queued_share(run.timeline)
    if run.limits and queued >= 0.05:
        out.append("<p><b>Limit that binds:</b> %s.</p>" % "; ".join(
            "<b>%s</b>: %s" % (esc(n), e) for n, e, _ in run.limits))
    elif run.limits:
        out.append("<p><b>Closest limit</b> (nothing queues yet: requests waited in %s of the "
                   "seconds): %s.</p>" % (pct(queued), "; ".join(
                       "<b>%s</b>: %s" % (esc(n), e) for n, e, _ in run.limits)))
    else:
        out.append("<p><b>Limit that binds:</b> none at this load (%s).</p>" %
                   headroom_words(r, run.timeline))
    out.extend(c for c in cautions if c)
    out.append(fidelity_words(fid))
    out.append("</div>")
    return "\n".join(out)


def margin_words(b):
    """How far p99 is from its bound: '83% under', '+25% over', '100x the bound'."""
    m = b["margin"]
    if m is None:
        return "&ndash;"
    if m >= 0:
        return "%s under" % pct(m)
    if -m >= 1:
        return "%s&times; the bound" % fmt(b["p99"] / b["bound"], ".3g")
    return "+%s over" % pct(-m)


def header_table(r):
    m, topo, dep = (get(r, k, default={}) or {} for k in ("model", "topology", "deployment"))
    layout = "TP%s &times; PP%s &times; %s replica(s)" % (
        esc(dep.get("tensor_parallel", "?")), esc(dep.get("pipeline_parallel", "?")),
        esc(dep.get("replicas", "?")))
    if num(dep.get("micro_batch")):
        layout += ", micro-batch %s" % esc(dep["micro_batch"])
    if num(dep.get("max_num_seqs")):
        layout += "; max_num_seqs %s, max_num_batched_tokens %s" % (
            fmt_int(dep["max_num_seqs"]), fmt_int(dep.get("max_num_batched_tokens")))
    return '<div class="tables">' + kv_table([
        ("model", "%s %s (%s B params)" % (esc(m.get("name", "?")), esc(m.get("quantization", "")),
                                           fmt(m.get("params_b"), ".3g"))),
        ("cluster", "%s: %s nodes &times; %s %s" % (
            esc(topo.get("name", "?")), esc(topo.get("nodes", "?")),
            esc(topo.get("gpus_per_node", "?")), esc(topo.get("gpu", "")))),
        ("deployment", layout),
        ("engine", esc(get(r, "fidelity", "engine", default="?"))),
        ("seed", esc(get(r, "seed", default="?"))),
        ("simulated", "%s (run in %s wall, %sx real time)" % (
            dur(get(r, "simulated_seconds")), dur(get(r, "run", "wall_seconds")),
            fmt(get(r, "run", "sim_speedup"), ".0f"))),
    ]) + "</div>"


def latency_table(r):
    rows = []
    for k, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E"), ("queue", "queue")):
        s = get(r, "latency_s", k)
        if isinstance(s, dict):
            rows.append([label] + [dur(s.get(p)) for p in ("mean", "p50", "p90", "p99", "max")])
    return ("<div><h3>Latency</h3>" + table(["", "mean", "p50", "p90", "p99", "max"], rows) +
            "</div>") if rows else ""


def summary_tables(run):
    r = run.report
    out = ["<h2>Summary</h2>", '<div class="tables">']
    q = get(r, "requests", default={}) or {}
    out.append("<div><h3>Requests</h3>" + kv_table(
        [(k, fmt_int(q.get(k))) for k in ("submitted", "completed", "rejected", "failed")]) +
        "</div>")
    out.append(latency_table(r))
    out.append("<div><h3>Throughput</h3>" + kv_table([
        ("requests/s", fmt(get(r, "throughput", "requests_per_s"))),
        ("output tokens/s", fmt(get(r, "throughput", "output_tokens_per_s"), ".0f")),
        ("goodput (req/s within the SLO)", fmt(get(r, "slo", "goodput_rps"))),
    ]) + "</div>")
    g = get(r, "gpus", default={}) or {}
    out.append("<div><h3>GPUs</h3>" + kv_table([
        ("count", fmt_int(g.get("count"))),
        ("busy, mean", pct(g.get("utilization_mean"))),
        ("busy, least / most", "%s / %s" % (pct(g.get("utilization_min")),
                                            pct(g.get("utilization_max")))),
        ("TFLOP/s per GPU", fmt(g.get("tflops_mean"), ".1f")),
        ("memory peak", pct(g.get("memory_used_fraction_max"))),
    ]) + "</div>")
    kv = get(r, "kv_cache", default={}) or {}
    out.append("<div><h3>KV cache</h3>" + kv_table([
        ("tokens per replica", fmt_int(kv.get("tokens_per_replica"))),
        ("peak usage", pct(kv.get("peak_usage"))),
        ("preemptions", fmt_int(get(r, "preemptions"))),
    ]) + "</div>")
    out.append("</div>")
    fo = get(r, "failover")
    if isinstance(fo, dict):
        active = [(k, v) for k, v in fo.items() if not isinstance(v, bool) and num(v)]
        if active:
            out.append("<h3>Failover</h3>" + kv_table(
                [(esc(k.replace("_", " ")), fmt_int(v) if float(num(v)).is_integer() else fmt(v))
                 for k, v in active]))
        else:
            out.append('<p class="note">Failover: none (no step failed, no replica was taken '
                       "out of routing).</p>")
    bp = get(r, "by_priority")
    if isinstance(bp, dict) and len(bp) > 1:
        rows = [[esc(c), fmt_int(get(v, "requests", "submitted")),
                 fmt_int(get(v, "requests", "completed")), dur(get(v, "latency_s", "ttft", "p99")),
                 dur(get(v, "latency_s", "e2e", "p99")), pct(get(v, "slo_attainment"))]
                for c, v in bp.items()]
        out.append("<h3>By priority</h3>" + table(
            ["class", "submitted", "completed", "TTFT p99", "E2E p99", "SLO attainment"], rows))
    errs = get(r, "load_errors")
    if isinstance(errs, list) and errs:
        out.append('<div class="warn"><b>Load errors</b><ul>%s</ul></div>' %
                   "".join("<li>%s</li>" % esc(e) for e in errs))
    return out


def timeline_panels(run):
    """The timeline charts of a run: [(key, title, ylabel, series, hlines, share)]; series are
    [(label, values per second)]. The comparison page overlays two runs' panels by key."""
    col = run.col
    cols = list(run.timeline[0].keys()) if run.timeline else []
    b = run.bounds if isinstance(run.bounds, dict) else {}
    caps = {c[0]: c for _, _, c in run.limits if c}
    red = "#d62728"
    panels = []
    rates = [("arrivals", moving_average(col("arrivals"))),
             ("completions", moving_average(col("completions")))]
    for extra in ("failures", "rejections"):
        rates.append((extra, moving_average(col(extra))))
    panels.append(("rates", "Requests per second (%d-s moving average)" % SMOOTH_S,
                   "requests / s", rates, [], False))
    hl = [(caps["running"][1], caps["running"][2], red)] if "running" in caps else []
    panels.append(("queue", "Requests running and waiting", "requests",
                   [("running", col("running")), ("waiting", col("waiting"))], hl, False))
    t_end = run.t_end or 0
    done = [r for r in run.requests if r.get("outcome") == "completed"]
    for key, label, time_col in (("ttft", "TTFT", "first_token_s"), ("tpot", "TPOT", "finish_s")):
        ys = per_second(done, time_col, key + "_s", t_end)
        bound = num(b.get(key + "_s"))
        panels.append((key, "%s p99 of the requests %s each second" % (
            label, "getting their first token" if key == "ttft" else "finishing"),
            "%s p99 (s)" % label, [("p99", ys)],
            [(bound, "SLO %s" % dur(bound).replace("&ndash;", ""), red)] if bound else [],
            False))
    p99 = [v if v else None for v in col("e2e_p99_s")]
    p50 = [v if v else None for v in col("e2e_p50_s")]
    bound = num(b.get("e2e_s"))
    panels.append(("e2e", "E2E latency of the requests finishing each second", "E2E (s)",
                   [("p50", p50), ("p99", p99)],
                   [(bound, "SLO %s" % dur(bound), red)] if bound else [], False))
    shares = [("GPU busy", col("gpu_utilization")), ("KV cache used", col("kv_usage"))]
    hl = [(1.0, "KV capacity", red)] if "kv" in caps else []
    panels.append(("util", "GPU utilization and KV cache usage", "share", shares, hl, True))
    rep = [("replicas up", col("replicas_up")), ("replicas loading", col("replicas_loading"))]
    panels.append(("replicas", "Replicas serving", "replicas", rep, [], False))
    temps = [(c.replace("temp_c_", ""), col(c)) for c in cols if c.startswith("temp_c_")]
    if "gpu_temp_c_max" in cols:
        temps.append(("GPU max", col("gpu_temp_c_max")))
    if temps:
        panels.append(("temps", "Temperatures", "°C", temps, [], False))
    if "retransmit_rate" in cols:
        panels.append(("retransmit", "Retransmit rate", "share of packets",
                       [("retransmit rate", col("retransmit_rate"))], [], False))
    links = [(c[len("util_"):], col(c)) for c in cols if c.startswith("util_")]
    if links:
        hl = [(1.0, "link capacity", red)] if "links" in caps else []
        panels.append(("links", "Link utilization", "share of bandwidth", links, hl, True))
    return panels


def unchartable(label, ys, share):
    """Why a series is stated in words instead of drawn ("" when it is drawn): it never
    changes, or it is a share that stays under 2% (a flat line at the bottom of a 0-100%
    axis)."""
    if is_flat(ys):
        return flat_note(label, ys)
    vals = [v for v in ys if v is not None]
    if share and max(vals) < 0.02:
        return "%s: at most %s" % (esc(label), pct(max(vals)))
    return ""


def timelines(plt, run):
    out, flat = [], []
    for key, title, ylabel, series, hlines, share in timeline_panels(run):
        kept = []
        for lab, ys in series:
            note = unchartable(lab, ys, share)
            if note:
                flat.append(note)
            else:
                kept.append((lab, ys))
        chart = timeline_chart(plt, run.t, kept, ylabel, run.windows, title, hlines=hlines,
                               share=share, x_max=run.t_end)
        if chart:
            out.append(chart)
    if not out:
        return []
    head = ["<h2>Timelines</h2>"]
    if run.windows:
        head.append("<p>Shaded: %s.</p>" % ", ".join(
            '<span class="fault" style="background:%s"></span>%s (%s&ndash;%s s)' % (
                c, esc(lab), fmt(s, ".0f"), fmt(e, ".0f")) for s, e, lab, c in run.windows))
    if flat:
        head.append('<p class="note">Not charted (no change, or under 2%% throughout): %s.</p>' %
                    "; ".join(flat))
    return head + out


def cdf_chart(plt, rows, slo_bounds):
    """Latency CDFs of completed requests: TTFT and E2E side by side."""
    done = [r for r in rows if r.get("outcome") == "completed"]
    if not done:
        return ""
    fig, axes = plt.subplots(1, 2, figsize=(9, 2.8))
    drew = False
    for ax, col, bound_key, title in ((axes[0], "ttft_s", "ttft_s", "TTFT"),
                                      (axes[1], "e2e_s", "e2e_s", "E2E latency")):
        vals = sorted(v for v in column(done, col) if v is not None)
        if not vals:
            ax.set_visible(False)
            continue
        n = len(vals)
        if n > MAX_POINTS:
            idx = sorted(set([round(i * (n - 1) / (MAX_POINTS - 1)) for i in range(MAX_POINTS)]))
        else:
            idx = list(range(n))
        ax.plot([vals[i] for i in idx], [(i + 1) / n for i in idx], lw=1.2, color=COLORS[0])
        for q, ls in ((0.5, ":"), (0.99, "--")):
            ax.axhline(q, color="#999", lw=0.8, ls=ls)
        b = num(get(slo_bounds, bound_key))
        if b is not None:
            ax.axvline(b, color="#d62728", ls="--", lw=1, label="SLO %g s" % b)
            ax.legend(loc="lower right")
        ax.set_xlabel(title + " (s)")
        ax.set_ylabel("fraction of requests")
        ax.set_ylim(0, 1.01)
        ax.set_title("%s CDF (%d completed requests)" % (title, n), loc="left", fontsize=9)
        drew = True
    if not drew:
        plt.close(fig)
        return ""
    fig.tight_layout()
    return svg_of(plt, fig)


def stage_chart(plt, run):
    """Busy share per pipeline stage (the whole run), the busiest in red with a 100% cap line:
    with PP > 1 the busiest stage sets the pace of every micro-batch. "" with one stage."""
    stages = stage_utilization(run.report)
    if len(stages) < 2:
        return ""
    names = ["stage %d" % s for s in stages]
    vals = [stages[s] for s in stages]
    top = max(vals)
    fig, ax = plt.subplots(figsize=(4.5, 0.5 + 0.35 * len(vals)))
    ax.barh(names, vals, color=["#d62728" if v == top else COLORS[0] for v in vals])
    ax.axvline(1.0, color="#d62728", ls="--", lw=1)
    for y, v in enumerate(vals):
        ax.text(min(v, 0.98), y, " %s" % pct(v).replace("&ndash;", ""), va="center",
                ha="right" if v > 0.85 else "left", fontsize=8,
                color="white" if v > 0.85 else "#222")
    ax.set_xlim(0, 1.05)
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(percent_formatter())
    ax.set_title("GPU busy by pipeline stage (whole run)", loc="left", fontsize=9)
    return svg_of(plt, fig)


def render_simulate(plt, d):
    run = Run(d)
    body = ["<h1>prima simulate: %s</h1>" % esc(run.name)]
    if run.description:
        body.append('<p class="note">%s</p>' % esc(run.description))
    body.append(slo_verdict(run))
    for a in run.incidents:
        body.append(verdict_html(a))
    body.append(header_table(run.report))
    body.extend(summary_tables(run))
    cdf = cdf_chart(plt, run.requests, run.bounds)
    if cdf:
        body.append("<h2>Latency distribution</h2>" + cdf)
    stages = stage_chart(plt, run)
    if stages:
        body.append("<h2>Pipeline stages</h2>" + stages)
    if run.timeline:
        body.extend(timelines(plt, run))
    else:
        body.append('<p class="muted">No timeline.csv: timelines omitted.</p>')
    return page("prima simulate: %s" % run.name, body)
