#!/usr/bin/env python3
"""Self-contained HTML reports for prima (issue 7).

    python3 reports/render.py simulate DIR   # DIR/report.json, requests.csv, timeline.csv
    python3 reports/render.py plan DIR       # DIR/plan.json (and DIR/results.jsonl)

writes DIR/report.html: one file, charts as inline SVG (matplotlib, Agg backend), no
network and no other file needed to view it. Inputs are read defensively: a missing key or
file skips its table or chart, never crashes. Output is deterministic for the same inputs.

Exit codes: 0 ok, 2 bad input (missing directory or main file, malformed JSON),
3 matplotlib missing. `prima report DIR` and `prima simulate --html` run this script
(embedded in the binary). Only the standard library and matplotlib are used.
"""

import csv
import html
import io
import json
import math
import os
import re
import sys

EXIT_BAD_INPUT = 2
EXIT_MISSING_DEP = 3
INSTALL_HINT = "install python3-matplotlib (scripts/setup.sh does)"

# Charts stay small: at most this many points per line (timelines are binned, CDFs sampled).
MAX_POINTS = 400
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]
FAULT_COLORS = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


class BadInput(Exception):
    pass


def die(msg, code):
    sys.stderr.write("render.py: %s\n" % msg)
    sys.exit(code)


def load_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        die("python3 module matplotlib is missing (%s): %s" % (e, INSTALL_HINT), EXIT_MISSING_DEP)
    matplotlib.rcParams.update({
        "svg.fonttype": "none",      # text stays text: smaller, searchable
        "svg.hashsalt": "prima",     # deterministic ids
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.fontsize": 8,
        "legend.frameon": False,
    })
    return plt


# ----------------------------------------------------------------------------- helpers

def esc(s):
    return html.escape(str(s), quote=True)


def get(d, *path, default=None):
    """d[path[0]][path[1]]..., or default when any step is missing or not a dict."""
    for p in path:
        if isinstance(d, dict) and p in d:
            d = d[p]
        elif isinstance(d, list) and isinstance(p, int) and -len(d) <= p < len(d):
            d = d[p]
        else:
            return default
    return d


def num(x):
    """A float, or None for anything that is not a finite number."""
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt(x, spec=".2f", scale=1.0, suffix=""):
    v = num(x)
    if v is None:
        return "&ndash;"
    return format(v * scale, spec) + suffix


def fmt_int(x):
    v = num(x)
    return "&ndash;" if v is None else "{:,}".format(int(v))


def pct(x):
    return fmt(x, ".1f", 100, "%")


def read_json_file(path, what):
    if not os.path.isfile(path):
        raise BadInput("%s: no such file (%s)" % (path, what))
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput("%s: cannot read: %s" % (path, e))
    except json.JSONDecodeError as e:
        raise BadInput("%s: malformed JSON: %s" % (path, e))


def read_csv(path):
    """Rows of a CSV file as dicts, or [] when the file is missing or unreadable."""
    if not os.path.isfile(path):
        return []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except (OSError, csv.Error, UnicodeDecodeError):
        return []


def column(rows, name):
    return [num(r.get(name)) for r in rows]


def table(headers, rows, cls=""):
    """An HTML table; cells are already-escaped HTML strings."""
    out = ['<table class="%s">' % cls if cls else "<table>", "<tr>"]
    out += ["<th>%s</th>" % h for h in headers]
    out.append("</tr>")
    for r in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % c for c in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def kv_table(pairs):
    return table(["", ""], pairs, "kv").replace("<tr><th></th><th></th></tr>\n", "", 1)


def svg_of(plt, fig):
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    s = buf.getvalue()
    s = s[s.find("<svg"):]                                       # drop XML prolog and DOCTYPE
    s = re.sub(r"<metadata>.*?</metadata>\s*", "", s, flags=re.S)  # RDF metadata (URLs)
    # Namespace declarations are implied for <svg> inside HTML: drop them (no URLs left).
    s = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", s)
    return '<div class="chart">%s</div>' % s


def thin(xs, ys_list):
    """At most MAX_POINTS points: bin consecutive points, keeping each bin's max (so spikes
    survive). xs are the bins' last x."""
    n = len(xs)
    if n <= MAX_POINTS:
        return xs, ys_list
    step = math.ceil(n / MAX_POINTS)
    nx = [xs[min(i + step, n) - 1] for i in range(0, n, step)]
    out = []
    for ys in ys_list:
        col = []
        for i in range(0, n, step):
            vals = [v for v in ys[i:i + step] if v is not None and not math.isnan(v)]
            col.append(max(vals) if vals else float("nan"))
        out.append(col)
    return nx, out


def nan_none(ys):
    return [float("nan") if v is None else v for v in ys]


def config_label(cfg):
    """A short label for a plan configuration: {"tensor_parallel": 4, ...} -> "TP4 PP2 x2"."""
    if cfg is None:
        return "?"
    if not isinstance(cfg, dict):
        return str(cfg)
    flat = {}

    def walk(prefix, d):
        for k, v in d.items():
            key = prefix + k
            if isinstance(v, dict):
                walk(key + ".", v)
            else:
                flat[key] = v
    walk("", cfg)
    abbrev = [("tensor_parallel", "TP"), ("pipeline_parallel", "PP"), ("replicas", "x"),
              ("micro_batch", "mb"), ("max_num_seqs", "seqs"),
              ("max_num_batched_tokens", "tokens")]
    parts, used = [], set()
    for key, short in abbrev:
        for k in sorted(flat):
            if k == key or k.endswith("." + key):
                parts.append("%s%s" % (short, flat[k]))
                used.add(k)
    for k in sorted(flat):
        if k not in used:
            parts.append("%s=%s" % (k.split(".")[-1], flat[k]))
    return " ".join(parts) if parts else "{}"


def entry_label(e):
    if not isinstance(e, dict):
        return str(e)
    if "key" in e:  # the planner's own short label ("bitbrick_k1 A100 tp4 pp1 x2 w8a8")
        return str(e["key"])
    if "config" in e:
        return config_label(e["config"])
    return "?"


# ----------------------------------------------------------------------------- HTML shell

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;
max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin-bottom:.3em}
table{border-collapse:collapse;margin:.4em 1.2em .8em 0;font-size:.9em}
td,th{border:1px solid #ddd;padding:.2em .6em;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
table.kv td:first-child{color:#555}
.tables{display:flex;flex-wrap:wrap;align-items:flex-start}
.chart svg{max-width:100%;height:auto}
.muted{color:#777}.warn{background:#fff3f3;border-left:4px solid #d62728;padding:.5em 1em}
.fidelity{background:#f2f8f2;border-left:4px solid #2ca02c;padding:.5em 1em;margin:.6em 0}
.fidelity.uncalibrated{background:#fff6e0;border-left-color:#e08000}
.fault{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle;opacity:.5}
code{background:#f4f4f4;padding:0 .2em}
.answer{background:#f2f6fc;border-left:4px solid #1f77b4;padding:.3em 1em;margin:.6em 0}
.answer h2{border:none;margin-top:.4em}
details summary{cursor:pointer;color:#1f77b4}details code{display:block;text-align:left;
white-space:pre-wrap;max-width:40em}
"""


def page(title, body):
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n%s\n"
            "<p class=\"muted\">Generated by prima (reports/render.py, matplotlib). "
            "Self-contained: no network needed.</p>\n</body>\n</html>\n") % (
                esc(title), CSS, "\n".join(body))


# ----------------------------------------------------------------------------- fidelity

def fidelity_line(f, label="Fidelity"):
    """One line saying how far the figures can be trusted (report.json's "fidelity", or one
    GPU type's entry of plan.json's): the profile and its measured error, or a warning that
    the cost model is uncalibrated."""
    if not isinstance(f, dict):
        return ""
    calibrated = f.get("calibrated") is True
    summary = f.get("summary") or ("calibrated" if calibrated else "roofline only, uncalibrated")
    text = "<b>%s:</b> %s" % (esc(label), esc(summary))
    if not calibrated:
        text += (" &mdash; these figures have not been checked against measurements of this "
                 "hardware.")
    if f.get("source"):
        text += ' <span class="muted">Source: %s</span>' % esc(f.get("source"))
    return '<div class="fidelity%s">%s</div>' % ("" if calibrated else " uncalibrated", text)


def gpu_fidelity(fidelity, gpu):
    """plan.json's fidelity entry for a GPU name (None when there is none)."""
    return fidelity.get(gpu) if isinstance(gpu, str) else None


def fidelity_error(f):
    """A short column value: the median error, or why there is none."""
    if not isinstance(f, dict) or f.get("calibrated") is not True:
        return "uncalibrated"
    m = num(f.get("median_abs_error"))
    return "unknown" if m is None else pct(m)


# ----------------------------------------------------------------------------- simulate

def incident_windows(report, t_end):
    out = []
    for i, inc in enumerate(get(report, "incidents", default=[]) or []):
        if not isinstance(inc, dict):
            continue
        start = num(inc.get("start_s"))
        end = num(inc.get("end_s"))
        if start is None:
            continue
        if end is None or end < start:
            end = t_end if t_end is not None else start
        label = str(inc.get("fault") or inc.get("type") or "fault #%d" % i)
        out.append((start, end, label, FAULT_COLORS[i % len(FAULT_COLORS)]))
    return out


def shade(ax, windows):
    """Shades and labels every fault window on a timeline axis."""
    for k, (start, end, label, color) in enumerate(windows):
        ax.axvspan(start, end, color=color, alpha=0.12, lw=0)
        ax.annotate(label, xy=(start, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(2, -2 - 10 * (k % 3)), textcoords="offset points",
                    va="top", ha="left", fontsize=7, color=color)


def timeline_chart(plt, t, series, ylabel, windows, title, hline=None, ylim=None):
    """series: [(label, values)]; values may hold None (no data)."""
    present = [(lab, ys) for lab, ys in series if any(v is not None for v in ys)]
    if not present or not t:
        return ""
    xs, cols = thin(t, [nan_none(ys) for _, ys in present])
    fig, ax = plt.subplots(figsize=(9, 2.3))
    for k, ((lab, _), ys) in enumerate(zip(present, cols)):
        ax.plot(xs, ys, lw=1, label=lab, color=COLORS[k % len(COLORS)])
    if hline is not None:
        ax.axhline(hline[0], color="#d62728", ls="--", lw=1, label=hline[1])
    shade(ax, windows)
    ax.set_xlim(0, max(xs[-1], max((w[1] for w in windows), default=0)))
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("simulated time (s)")
    ax.set_title(title, loc="left", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return svg_of(plt, fig)


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


def render_simulate(plt, d):
    report = read_json_file(os.path.join(d, "report.json"), "a simulate run's report")
    if not isinstance(report, dict):
        raise BadInput("%s: expected a JSON object" % os.path.join(d, "report.json"))
    requests = read_csv(os.path.join(d, "requests.csv"))
    timeline = read_csv(os.path.join(d, "timeline.csv"))
    name = get(report, "scenario", default="(unnamed)")
    body = ["<h1>prima simulate: %s</h1>" % esc(name)]
    fid = fidelity_line(get(report, "fidelity"))
    if fid:
        body.append(fid)

    # Header.
    m, topo, dep = get(report, "model", default={}), get(report, "topology", default={}), \
        get(report, "deployment", default={})
    body.append('<div class="tables">')
    body.append(kv_table([
        ("scenario", esc(name)),
        ("seed", esc(get(report, "seed", default="?"))),
        ("model", "%s %s (%s B params)" % (esc(get(m, "name", default="?")),
                                           esc(get(m, "quantization", default="")),
                                           fmt(get(m, "params_b"), "g"))),
        ("topology", "%s: %s nodes &times; %s %s" % (
            esc(get(topo, "name", default="?")), esc(get(topo, "nodes", default="?")),
            esc(get(topo, "gpus_per_node", default="?")), esc(get(topo, "gpu", default="")))),
        ("deployment", "TP%s &times; PP%s &times; %s replica(s), micro-batch %s" % (
            esc(get(dep, "tensor_parallel", default="?")),
            esc(get(dep, "pipeline_parallel", default="?")),
            esc(get(dep, "replicas", default="?")), esc(get(dep, "micro_batch", default="?")))),
        ("simulated", fmt(get(report, "simulated_seconds"), ".1f", suffix=" s")),
        ("run", "%s wall s, %sx real time" % (fmt(get(report, "run", "wall_seconds")),
                                              fmt(get(report, "run", "sim_speedup"), ".0f"))),
    ]))
    body.append("</div>")

    # Summary tables.
    body.append("<h2>Summary</h2>")
    body.append('<div class="tables">')
    q = get(report, "requests", default={})
    body.append("<div><h3>Requests</h3>" + kv_table(
        [(k, fmt_int(get(q, k))) for k in ("submitted", "completed", "rejected", "failed")]) +
        "</div>")
    lat = get(report, "latency_s", default={})
    lat_rows = []
    for k in ("ttft", "tpot", "e2e", "queue"):
        s = get(lat, k)
        if isinstance(s, dict):
            lat_rows.append([k] + [fmt(get(s, p), ".1f", 1e3) for p in
                                   ("mean", "p50", "p90", "p99", "max")])
    if lat_rows:
        body.append("<div><h3>Latency (ms)</h3>" +
                    table(["", "mean", "p50", "p90", "p99", "max"], lat_rows) + "</div>")
    slo = get(report, "slo", default={})
    bounds = get(slo, "bounds", default={}) or {}
    body.append("<div><h3>Throughput and SLO</h3>" + kv_table([
        ("requests/s", fmt(get(report, "throughput", "requests_per_s"))),
        ("output tokens/s", fmt(get(report, "throughput", "output_tokens_per_s"), ".0f")),
        ("SLO attainment", pct(get(slo, "attainment"))),
        ("goodput (req/s)", fmt(get(slo, "goodput_rps"))),
        ("requests meeting SLO", fmt_int(get(slo, "met"))),
        ("SLO bounds", esc(", ".join("%s &le; %g s" % (k, v) for k, v in bounds.items()
                                     if num(v) is not None)) or "none"),
    ]).replace("&amp;le;", "&le;") + "</div>")
    g = get(report, "gpus", default={})
    body.append("<div><h3>GPUs</h3>" + kv_table([
        ("count", fmt_int(get(g, "count"))),
        ("utilization mean", pct(get(g, "utilization_mean"))),
        ("utilization min / max", "%s / %s" % (pct(get(g, "utilization_min")),
                                               pct(get(g, "utilization_max")))),
        ("TFLOP/s per GPU", fmt(get(g, "tflops_mean"), ".1f")),
        ("memory peak", pct(get(g, "memory_used_fraction_max"))),
    ]) + "</div>")
    kv = get(report, "kv_cache", default={})
    body.append("<div><h3>KV cache</h3>" + kv_table([
        ("blocks per replica", fmt_int(get(kv, "blocks_per_replica"))),
        ("block size (tokens)", fmt_int(get(kv, "block_size"))),
        ("peak used blocks", fmt_int(get(kv, "peak_used_blocks"))),
        ("peak usage", pct(get(kv, "peak_usage"))),
        ("preemptions", fmt_int(get(report, "preemptions"))),
    ]) + "</div>")
    fo = get(report, "failover")
    if isinstance(fo, dict):
        body.append("<div><h3>Failover</h3>" + kv_table(
            [(esc(k.replace("_", " ")), esc(v) if isinstance(v, (bool, str)) else fmt_int(v)
              if float(num(v) or 0).is_integer() else fmt(v))
             for k, v in fo.items()]) + "</div>")
    body.append("</div>")
    bp = get(report, "by_priority")
    if isinstance(bp, dict) and len(bp) > 1:
        rows = []
        for cls, v in bp.items():
            rows.append([esc(cls), fmt_int(get(v, "requests", "submitted")),
                         fmt_int(get(v, "requests", "completed")),
                         fmt(get(v, "latency_s", "ttft", "p99"), ".1f", 1e3),
                         fmt(get(v, "latency_s", "e2e", "p99"), ".1f", 1e3),
                         pct(get(v, "slo_attainment"))])
        body.append("<h3>By priority</h3>" + table(
            ["class", "submitted", "completed", "TTFT p99 (ms)", "E2E p99 (ms)",
             "SLO attainment"], rows))
    errs = get(report, "load_errors")
    if isinstance(errs, list) and errs:
        body.append('<div class="warn"><b>Load errors</b><ul>%s</ul></div>' %
                    "".join("<li>%s</li>" % esc(e) for e in errs))

    # Incidents.
    t = [v for v in column(timeline, "t_s")]
    t_ok = all(v is not None for v in t)
    t_end = num(get(report, "simulated_seconds")) or (t[-1] if t and t_ok else None)
    windows = incident_windows(report, t_end)
    incidents = [i for i in (get(report, "incidents", default=[]) or []) if isinstance(i, dict)]
    if incidents:
        body.append("<h2>Incidents</h2>")
        rows = []
        for k, inc in enumerate(incidents):
            color = FAULT_COLORS[k % len(FAULT_COLORS)]
            window = "%s&ndash;%s s%s" % (fmt(inc.get("start_s"), ".0f"),
                                          fmt(inc.get("end_s"), ".0f"),
                                          " (ongoing)" if inc.get("ongoing") else "")
            rows.append([
                '<span class="fault" style="background:%s"></span>%s' % (
                    color, esc(inc.get("fault", "?"))),
                esc(inc.get("type", "?")), esc(inc.get("target", "?")), window,
                fmt_int(inc.get("requests_inside")), fmt_int(inc.get("failed_inside")),
                fmt(inc.get("e2e_p99_inside_s")), fmt(inc.get("e2e_p99_outside_s")),
                fmt(inc.get("e2e_p50_inside_s")), fmt(inc.get("e2e_p50_outside_s")),
                fmt(inc.get("ttft_p99_inside_s")), fmt(inc.get("ttft_p99_outside_s"))])
        body.append(table(["fault", "type", "target", "window", "requests in flight",
                           "failed in flight", "E2E p99 inside (s)", "E2E p99 outside (s)",
                           "E2E p50 inside (s)", "E2E p50 outside (s)",
                           "TTFT p99 inside (s)", "TTFT p99 outside (s)"], rows))
        body.append('<p class="muted">Inside = requests in flight at some time during the '
                    "window. Every timeline below shades the windows.</p>")

    # Latency CDFs.
    cdf = cdf_chart(plt, requests, bounds)
    if cdf:
        body.append("<h2>Latency distribution</h2>" + cdf)

    # Timelines.
    if timeline and t_ok:
        charts = []
        col = lambda name: column(timeline, name)  # noqa: E731
        cols = list(timeline[0].keys())
        rate_series = [("arrivals", col("arrivals")), ("completions", col("completions"))]
        for extra in ("rejections", "failures"):
            vals = col(extra)
            if any(v for v in vals if v):
                rate_series.append((extra, vals))
        charts.append(timeline_chart(plt, t, rate_series, "requests / s", windows,
                                     "Arrivals and completions per second"))
        charts.append(timeline_chart(plt, t, [("waiting", col("waiting")),
                                              ("running", col("running"))],
                                     "requests", windows, "Queue length"))
        # Windowed E2E: 0 means nothing completed in that second.
        p50 = [None if not v else v for v in col("e2e_p50_s")]
        p99 = [None if not v else v for v in col("e2e_p99_s")]
        e2e_bound = num(bounds.get("e2e_s")) if isinstance(bounds, dict) else None
        charts.append(timeline_chart(plt, t, [("p50", p50), ("p99", p99)], "E2E latency (s)",
                                     windows, "E2E latency of requests completed each second",
                                     hline=(e2e_bound, "SLO %g s" % e2e_bound)
                                     if e2e_bound is not None else None))
        charts.append(timeline_chart(plt, t, [("GPU utilization", col("gpu_utilization")),
                                              ("KV cache usage", col("kv_usage"))],
                                     "share", windows, "GPU utilization and KV cache usage",
                                     ylim=(0, 1.05)))
        rep = [("replicas up", col("replicas_up"))]
        if any(v for v in col("replicas_loading") if v):
            rep.append(("replicas loading", col("replicas_loading")))
        top = max([v for _, ys in rep for v in ys if v is not None] or [1])
        charts.append(timeline_chart(plt, t, rep, "replicas", windows, "Replicas serving",
                                     ylim=(0, top + 0.5)))
        temps = [(c.replace("temp_c_", ""), col(c)) for c in cols if c.startswith("temp_c_")]
        if "gpu_temp_c_max" in cols:
            temps.append(("GPU max", col("gpu_temp_c_max")))
        if temps:
            charts.append(timeline_chart(plt, t, temps, "°C", windows, "Temperatures"))
        if "retransmit_rate" in cols:
            charts.append(timeline_chart(plt, t, [("retransmit rate", col("retransmit_rate"))],
                                         "share of packets", windows, "Retransmit rate"))
        links = [(c[len("util_"):], col(c)) for c in cols if c.startswith("util_")]
        if links:
            charts.append(timeline_chart(plt, t, links, "share of bandwidth", windows,
                                         "Link utilization"))
        charts = [c for c in charts if c]
        if charts:
            body.append("<h2>Timelines (per simulated second)</h2>")
            if windows:
                body.append("<p>Shaded: %s.</p>" % ", ".join(
                    '<span class="fault" style="background:%s"></span>%s (%s&ndash;%s s)' % (
                        c, esc(lab), fmt(s, ".0f"), fmt(e, ".0f"))
                    for s, e, lab, c in windows))
            body.extend(charts)
    elif not timeline:
        body.append('<p class="muted">No timeline.csv: timelines omitted.</p>')
    return page("prima simulate: %s" % name, body)


# ----------------------------------------------------------------------------- plan

def read_jsonl(path):
    out = []
    if not os.path.isfile(path):
        return out
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    v = json.loads(line)
                except json.JSONDecodeError:
                    continue  # one bad line skips that point, not the report
                if isinstance(v, dict):
                    out.append(v)
    except (OSError, UnicodeDecodeError):
        return []
    return out


def slo_bound(slo, *names):
    """A bound from the plan's SLO, whatever the spelling: e2e_s, e2e, p99_e2e_s, ..."""
    if not isinstance(slo, dict):
        return None
    for k, v in slo.items():
        kl = k.lower()
        if any(n in kl for n in names):
            x = num(v)
            if x is None and isinstance(v, str):
                m = re.fullmatch(r"\s*([0-9.]+)\s*(ms|s)?\s*", v)
                if m:
                    x = float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)
            if x is not None:
                return x
    return None


def pareto_front(points):
    """points: [(cost, goodput, label)]; the ones no other point beats on both (lower cost,
    higher goodput), sorted by cost."""
    front = []
    for c, g, lab in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or g > front[-1][1]:
            front.append((c, g, lab))
    return front


def folded_sets(r):
    """The overrides that rerun a configuration, folded away (a click shows them)."""
    sets = r.get("sets") if isinstance(r.get("sets"), list) else []
    if not sets and not r.get("command"):
        return ""
    text = r.get("command") or " ".join("--set %s" % x for x in sets)
    return "<details><summary>command</summary><code>%s</code></details>" % esc(text)


def slo_margin_text(slo, metrics):
    """'TTFT p99 212 ms of 300 ms (29% under); TPOT p99 ...' for a plan entry's metrics."""
    parts = []
    for key, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E")):
        bound = num(slo.get(key + "_p99_s"))
        got = num(get(metrics, key + "_p99_s"))
        if bound and got is not None:
            parts.append("%s p99 %s of %s (%.0f%% under)" % (
                label, fmt(got * 1e3, ".0f", suffix=" ms"), fmt(bound * 1e3, ".0f", suffix=" ms"),
                100 * (1 - got / bound)))
    att, target = num(get(metrics, "attainment")), num(slo.get("attainment"))
    if att is not None and target is not None:
        parts.append("attainment %s (target %s)" % (pct(att), pct(target)))
    return "; ".join(parts)


def energy_text(e):
    """", 0.42 kWh per million output tokens (2,810 W at 63% busy)" for a plan entry, or ""."""
    kwh = num(e.get("energy_kwh_per_million_tokens"))
    if kwh is None:
        return ""
    return ", %s kWh per million output tokens (%s W at %s%% busy)" % (
        fmt(kwh, ".3f"), fmt(e.get("power_watts"), ".0f"),
        fmt((num(e.get("gpu_utilization")) or 0) * 100, ".0f"))


def economics_lines(plan):
    """Where the cost and energy figures come from: the price table and each GPU's sources."""
    econ = plan.get("economics") if isinstance(plan.get("economics"), dict) else None
    if not econ or not isinstance(econ.get("gpus"), dict) or not econ["gpus"]:
        return []
    out = ['<p class="note">Cost and energy from %s (power: idle + (peak &minus; idle) &times; the '
           'simulated busy fraction; peak is the board power, an upper bound for memory-bound '
           'decode):</p><ul class="note">' % esc(econ.get("price_table", "?"))]
    for gpu in sorted(econ["gpus"]):
        g = econ["gpus"][gpu]
        out.append("<li>%s: $%s per GPU-hour (%s); %s&ndash;%s W (%s)</li>" % (
            esc(gpu), fmt(g.get("price_per_gpu_hour"), ".2f"), esc(g.get("price_source", "")),
            fmt(g.get("idle_watts"), ".0f"), fmt(g.get("peak_watts"), ".0f"),
            esc(g.get("power_source", ""))))
    out.append("</ul>")
    return out


def plan_answer(plan, ranked, slo):
    """The page's lead: the recommended configuration, why it won, its margin to the SLO and
    the runner-up (with a target rate: the fewest GPUs meeting the SLO at it, and the check
    that one replica fewer fails)."""
    out = ['<div class="answer">']
    target = plan.get("target") if isinstance(plan.get("target"), dict) else None
    if target is not None:
        rate = target.get("rate_rps")
        best = target.get("fewest_gpus")
        if not isinstance(best, dict):
            out.append("<b>Nothing in the space meets the SLO at %s req/s.</b></div>" % fmt(rate, ".3g"))
            return out
        cost = best.get("cost_per_hour")
        out.append("<h2>Answer: %s</h2>" % esc(best.get("key")))
        out.append("<p>The fewest GPUs meeting the SLO at <b>%s req/s</b>: <b>%s GPUs</b>%s%s. %s.</p>" % (
            fmt(rate, ".3g"), fmt_int(best.get("gpus")),
            (", $%s per hour" % fmt(cost, ".2f")) if num(cost) is not None else "",
            energy_text(best), esc(target.get("why", ""))))
        out.append("<p>Margin at %s req/s: %s.</p>" % (fmt(rate, ".3g"),
                                                       esc(slo_margin_text(slo, best.get("metrics")))))
        low = target.get("lowest_cost")
        if isinstance(low, dict) and low.get("key") != best.get("key"):
            out.append("<p>Cheapest per hour: %s ($%s per hour, %s GPUs).</p>" % (
                esc(low.get("key")), fmt(low.get("cost_per_hour"), ".2f"), fmt_int(low.get("gpus"))))
        mini = target.get("one_replica_fewer") if isinstance(target.get("one_replica_fewer"), dict) else {}
        if mini.get("checked") and "pruned" in mini:
            out.append("<p>Minimal: one replica fewer is pruned (%s).</p>" % esc(mini["pruned"]))
        elif mini.get("checked"):
            out.append("<p>%s: with one replica fewer (%s, %s GPUs) %s.</p>" % (
                "Minimal" if not mini.get("meets_slo") else "<b>Not minimal</b>",
                esc(mini.get("key")), fmt_int(mini.get("gpus")),
                "it fails the SLO: " + esc("; ".join(mini.get("violations") or []))
                if not mini.get("meets_slo") else "it meets the SLO too"))
        elif mini.get("reason"):
            out.append("<p>Minimal: %s.</p>" % esc(mini["reason"]))
        runner = target.get("runner_up")
        if isinstance(runner, dict):
            out.append("<p>Runner-up: %s (%s GPUs).</p>" % (esc(runner.get("key")),
                                                           fmt_int(runner.get("gpus"))))
        out.append("</div>")
        return out
    if not ranked:
        out.append("</div>")
        return []
    best = ranked[0]
    out.append("<h2>Recommended: %s</h2>" % esc(entry_label(best)))
    out.append("<p>It won on goodput per GPU: <b>%s req/s per GPU</b> (it meets the SLO up to %s "
               "req/s on %s GPUs)%s.</p>" % (
                   fmt(best.get("goodput_per_gpu"), ".3f"), fmt(best.get("max_rate_rps"), ".3g"),
                   fmt_int(best.get("gpus", get(best, "config", "gpus"))),
                   ((", $%s per million output tokens" % fmt(best.get("cost_per_million_tokens"), ".3f"))
                    if num(best.get("cost_per_million_tokens")) is not None else "") + energy_text(best)))
    margin = slo_margin_text(slo, best.get("metrics"))
    if margin:
        out.append("<p>Margin at that rate: %s%s.</p>" % (
            esc(margin), ("; the lowest rate that failed: %s req/s" % fmt(best.get("lowest_failing_rate_rps"), ".3g"))
            if num(best.get("lowest_failing_rate_rps")) is not None else ""))
    if len(ranked) > 1:
        r = ranked[1]
        out.append("<p>Runner-up: %s, %s req/s per GPU (%s req/s on %s GPUs).</p>" % (
            esc(entry_label(r)), fmt(r.get("goodput_per_gpu"), ".3f"), fmt(r.get("max_rate_rps"), ".3g"),
            fmt_int(r.get("gpus", get(r, "config", "gpus")))))
    out.append("</div>")
    return out


def render_plan(plt, d):
    plan = read_json_file(os.path.join(d, "plan.json"), "a plan's result")
    if not isinstance(plan, dict):
        raise BadInput("%s: expected a JSON object" % os.path.join(d, "plan.json"))
    results = read_jsonl(os.path.join(d, "results.jsonl"))
    name = plan.get("name", "(unnamed)")
    slo = plan.get("slo") if isinstance(plan.get("slo"), dict) else {}
    ranked = [r for r in (plan.get("ranked") or []) if isinstance(r, dict)]
    pruned = [r for r in (plan.get("pruned") or []) if isinstance(r, dict)]
    failed = [r for r in (plan.get("failed_slo") or []) if isinstance(r, dict)]
    body = ["<h1>prima plan: %s</h1>" % esc(name)]
    fidelity = plan.get("fidelity") if isinstance(plan.get("fidelity"), dict) else {}
    body.extend(plan_answer(plan, ranked, slo))
    for gpu in sorted(fidelity):
        body.append(fidelity_line(fidelity[gpu], "Fidelity on %s" % gpu))
    body.append('<div class="tables">' + kv_table([
        ("SLO", esc(", ".join("%s: %s" % (k, v) for k, v in slo.items())) or "&ndash;"),
        ("configurations searched", fmt_int(plan.get("searched"))),
        ("simulations", fmt_int(plan.get("simulations"))),
        ("wall time", fmt(plan.get("wall_seconds"), ".1f", suffix=" s")),
        ("meet the SLO", fmt_int(len(ranked))),
        ("failed the SLO", fmt_int(len(failed))),
        ("pruned", fmt_int(len(pruned))),
    ]) + "</div>")

    if ranked:
        body.append("<h2>Ranked configurations</h2>")
        rows = []
        for k, r in enumerate(ranked):
            rows.append([str(k + 1), esc(entry_label(r)), fmt(r.get("max_rate_rps")),
                         fmt(r.get("goodput_per_gpu"), ".3f"),
                         fmt(r.get("cost_per_million_tokens"), ".3f"),
                         fmt(r.get("energy_kwh_per_million_tokens"), ".3f"),
                         fmt_int(r.get("gpus", get(r, "config", "gpus"))),
                         esc(fidelity_error(gpu_fidelity(fidelity, get(r, "config", "gpu")))),
                         folded_sets(r)])
        body.append(table(["rank", "config", "max_rate_rps", "goodput_per_gpu",
                           "cost_per_million_tokens", "kWh per million tokens", "GPUs",
                           "model error (median)", "rerun"],
                          rows, "ranked"))
        body.extend(economics_lines(plan))
    else:
        body.append('<div class="warn"><b>No configuration meets the SLO.</b> ')
        cands = failed
        if not cands and results:
            best = {}
            for r in results:
                key = entry_label(r)
                att = num(get(r, "report", "slo", "attainment"))
                if att is not None and (key not in best or att > best[key][0]):
                    best[key] = (att, r)
            cands = [dict(v[1], attainment=v[0]) for v in
                     sorted(best.values(), key=lambda v: -v[0])]
        if cands:
            body.append("The closest candidates:</div>")
            keys = []
            for c in cands[:5]:
                for k, v in c.items():
                    if k not in ("config", "key", "report") and k not in keys and \
                            (num(v) is not None or isinstance(v, str)):
                        keys.append(k)
            rows = [[esc(entry_label(c))] + [
                fmt(c.get(k), ".3g") if num(c.get(k)) is not None else esc(c.get(k, ""))
                for k in keys] for c in cands[:5]]
            body.append(table(["config"] + [esc(k) for k in keys], rows, "closest"))
        else:
            body.append("No candidate was simulated.</div>")

    # Throughput vs rate, per configuration.
    series = {}
    for r in results:
        rate = num(r.get("rate_rps"))
        if rate is None:
            continue
        series.setdefault(entry_label(r), []).append((rate, r))
    if series:
        e2e_bound = slo_bound(slo, "e2e") or num(get(results[0], "report", "slo", "bounds",
                                                     "e2e_s"))
        ttft_bound = slo_bound(slo, "ttft") or num(get(results[0], "report", "slo", "bounds",
                                                       "ttft_s"))
        att_target = slo_bound(slo, "attainment", "target", "percentile")
        if att_target is not None and att_target > 1:
            att_target /= 100.0
        def metric(r, flat, *nested):
            # results.jsonl from `prima plan` carries flat "metrics"; older files a "report".
            v = get(r, "metrics", flat)
            return v if v is not None else get(r, "report", *nested)

        panels = [("goodput (req/s)", lambda r: metric(r, "goodput_rps", "slo", "goodput_rps"),
                   None, "Achieved goodput vs offered rate"),
                  ("E2E p99 (s)", lambda r: metric(r, "e2e_p99_s", "latency_s", "e2e", "p99"),
                   e2e_bound, "E2E p99 latency vs offered rate"),
                  ("TTFT p99 (s)", lambda r: metric(r, "ttft_p99_s", "latency_s", "ttft", "p99"),
                   ttft_bound, "TTFT p99 vs offered rate"),
                  ("SLO attainment", lambda r: metric(r, "attainment", "slo", "attainment"),
                   att_target, "SLO attainment vs offered rate")]
        charts = []
        # The best-ranked configurations (all of them when the plan is small): a chart with
        # dozens of curves says nothing.
        top = [entry_label(r) for r in ranked[:8]]
        labels = [lab for lab in top if lab in series] if top else sorted(series)[:8]
        for ylabel, getter, bound, title in panels:
            fig, ax = plt.subplots(figsize=(9, 3))
            drew = False
            max_rate = 0.0
            all_y = []
            for k, lab in enumerate(labels):
                pts = sorted(series[lab], key=lambda p: p[0])
                xs = [p[0] for p in pts if num(getter(p[1])) is not None]
                ys = [num(getter(p[1])) for p in pts if num(getter(p[1])) is not None]
                ok = [p[1].get("meets_slo", p[1].get("meets")) is not False for p in pts
                      if num(getter(p[1])) is not None]
                if not xs:
                    continue
                drew = True
                all_y += ys
                max_rate = max(max_rate, xs[-1])
                color = COLORS[k % len(COLORS)]
                ax.plot(xs, ys, lw=1, color=color, label=lab)
                ax.scatter([x for x, o in zip(xs, ok) if o], [y for y, o in zip(ys, ok) if o],
                           s=14, color=color)
                ax.scatter([x for x, o in zip(xs, ok) if not o],
                           [y for y, o in zip(ys, ok) if not o], s=14, facecolors="white",
                           edgecolors=color)
            if not drew:
                plt.close(fig)
                continue
            if ylabel.startswith("goodput"):
                ax.plot([0, max_rate], [0, max_rate], color="#999", ls=":", lw=1,
                        label="goodput = offered")
            if bound is not None:
                ax.axhline(bound, color="#d62728", ls="--", lw=1, label="SLO %g" % bound)
            if "p99" in ylabel and min(all_y) > 0 and max(all_y) / min(all_y) > 50:
                ax.set_yscale("log")  # latency explodes past saturation: keep the SLO visible
            ax.set_xlabel("offered rate (req/s)")
            ax.set_ylabel(ylabel)
            ax.set_title(title + " (hollow: misses the SLO)", loc="left", fontsize=9)
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
            charts.append(svg_of(plt, fig))
        if charts:
            body.append("<h2>Throughput vs offered rate</h2>")
            body.extend(charts)

    # Throughput per GPU against what one user sees, InferenceX style: every simulated
    # operating point (a configuration at a rate), and plan.json's front over those meeting
    # the SLO.
    front_pts = [p for p in (plan.get("pareto") or []) if isinstance(p, dict)]
    ops = []
    for r in results:
        t, tok = num(get(r, "metrics", "tpot_mean_s")), num(get(r, "metrics", "output_tokens_per_s"))
        g = num(get(r, "config", "gpus"))
        if t and tok is not None and g:
            ops.append((1.0 / t, tok / g, bool(r.get("meets"))))
    if front_pts or ops:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for met, label, face in ((True, "meets the SLO", "#999"), (False, "misses the SLO", "none")):
            sel = [o for o in ops if o[2] == met]
            if sel:
                ax.scatter([o[0] for o in sel], [o[1] for o in sel], s=14, facecolors=face,
                           edgecolors="#999", label=label)
        if front_pts:
            xs = [num(p.get("tokens_per_s_per_user")) for p in front_pts]
            ys = [num(p.get("tokens_per_s_per_gpu")) for p in front_pts]
            ax.plot(xs, ys, "-o", ms=5, lw=1.2, color=COLORS[0], label="Pareto front (meets the SLO)")
        ax.set_xlabel("output tokens/s per user (1 / mean TPOT)")
        ax.set_ylabel("output tokens/s per GPU")
        ax.set_title("Throughput per GPU vs interactivity", loc="left", fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
        body.append("<h2>Pareto front: tokens/s per GPU vs tokens/s per user</h2>" + svg_of(plt, fig))
        if front_pts:
            body.append(table(["config", "rate (req/s)", "tokens/s per user", "tokens/s per GPU"],
                              [[esc(p.get("key")), fmt(p.get("rate_rps"), ".3g"),
                                fmt(p.get("tokens_per_s_per_user"), ".1f"),
                                fmt(p.get("tokens_per_s_per_gpu"), ".1f")] for p in front_pts]))

    # Pareto front of cost vs goodput.
    pts = []
    for r in ranked:
        c, g = num(r.get("cost_per_million_tokens")), num(r.get("goodput_per_gpu"))
        if c is not None and g is not None:
            pts.append((c, g, entry_label(r)))
    if pts:
        front = pareto_front(pts)
        fig, ax = plt.subplots(figsize=(7, 3.6))
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=18, color="#999",
                   label="ranked configurations")
        ax.plot([p[0] for p in front], [p[1] for p in front], "-o", ms=5, lw=1.2,
                color=COLORS[0], label="Pareto front")
        for c, g, lab in front:
            ax.annotate(lab, (c, g), xytext=(4, 4), textcoords="offset points", fontsize=7)
        ax.set_xlabel("cost per million tokens")
        ax.set_ylabel("goodput per GPU (req/s)")
        ax.set_title("Cost vs goodput", loc="left", fontsize=9)
        ax.legend(loc="lower right")
        body.append("<h2>Pareto front: cost vs goodput</h2>" + svg_of(plt, fig))
        body.append(table(["config", "cost_per_million_tokens", "goodput_per_gpu"],
                          [[esc(lab), fmt(c, ".3f"), fmt(g, ".3f")] for c, g, lab in front]))

    if failed and ranked:
        body.append("<h2>Failed the SLO</h2>")
        body.append(table(["config", "detail"], [[esc(entry_label(f)), esc(", ".join(
            "%s=%s" % (k, v) for k, v in f.items() if k not in ("config", "key")))]
            for f in failed]))
    if pruned:
        body.append("<h2>Pruned (not simulated)</h2>")
        body.append(table(["config", "reason"], [[esc(entry_label(p)), esc(p.get("reason", ""))]
                                                 for p in pruned]))
    return page("prima plan: %s" % name, body)


# ----------------------------------------------------------------------------- main

def main(argv):
    if len(argv) != 3 or argv[1] not in ("simulate", "plan"):
        die("usage: render.py simulate|plan DIR", EXIT_BAD_INPUT)
    kind, d = argv[1], argv[2]
    if not os.path.isdir(d):
        die("%s: no such directory" % d, EXIT_BAD_INPUT)
    plt = load_matplotlib()
    try:
        out = render_simulate(plt, d) if kind == "simulate" else render_plan(plt, d)
    except BadInput as e:
        die(str(e), EXIT_BAD_INPUT)
    path = os.path.join(d, "report.html")
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(out)
        os.replace(tmp, path)
    except OSError as e:
        die("%s: cannot write: %s" % (path, e), 1)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
