"""Shared pieces of prima's HTML reports: reading inputs defensively, number formatting,
tables, the page shell and its one style sheet, the fidelity line and chart helpers.
Only the standard library here; matplotlib is passed in as `plt` by render.py."""

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
    """A two-column table of (label, value) rows, without a header row."""
    out = ['<table class="kv">']
    out += ["<tr><td>%s</td><td>%s</td></tr>" % (k, v) for k, v in pairs]
    out.append("</table>")
    return "\n".join(out)


def dur(x):
    """A duration people read: '337 ms' under a second, '2.21 s' above, '1,234 s' from 100 s."""
    v = num(x)
    if v is None:
        return "&ndash;"
    a = abs(v)
    if a == 0:
        return "0 s"
    if a < 0.9995:
        return "%s ms" % format(v * 1e3, ".3g" if a >= 0.001 else ".2g")
    if a < 99.95:
        return "%s s" % format(v, ".3g")
    return "{:,.0f} s".format(v)


def svg_of(plt, fig, tight=True):
    """The figure as inline SVG. tight=False keeps the figure's own size and margins (charts
    that must line up with each other)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight" if tight else None,
                metadata={"Date": None})
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


# ----------------------------------------------------------------------------- HTML shell

def _read_css():
    """The shared style sheet (style.css beside this file)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "style.css")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""  # unstyled, still readable


CSS = _read_css()


def page(title, body):
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n%s\n"
            "<p class=\"muted\">Generated by prima (reports/render.py, matplotlib). "
            "Self-contained: no network needed.</p>\n</body>\n</html>\n") % (
                esc(title), CSS, "\n".join(body))


# ----------------------------------------------------------------------------- trust

FIDELITY_DOC = "docs/fidelity.md"


def stated_error(f, metric=None):
    """(median, max) relative error a report states for a fidelity entry (report.json's
    "fidelity" or one of plan.json's): the out-of-sample figures of `metric` ("ttft", "tpot",
    "e2e", "throughput") when the entry has them, else over every metric. None when the
    figures are uncalibrated (no stated error)."""
    if not isinstance(f, dict) or f.get("calibrated") is not True:
        return None
    src = get(f, "by_metric", metric) if metric else None
    if not isinstance(src, dict) or num(src.get("max_abs_error")) is None:
        src = f
    med, mx = num(src.get("median_abs_error")), num(src.get("max_abs_error"))
    if mx is None:
        return None
    return (med if med is not None else mx, mx)


def fidelity_words(f):
    """The fidelity statement in plain words, with a link to docs/fidelity.md."""
    if not isinstance(f, dict):
        return ""
    engine = f.get("engine")
    hw = f.get("hardware_profile") or get(f, "hardware", "profile")
    who = "the %s engine profile" % esc(engine) if engine else "the cost model"
    if hw:
        who += " on the %s hardware profile" % esc(hw)
    if f.get("calibrated") is True:
        med, mx = num(f.get("median_abs_error")), num(f.get("max_abs_error"))
        text = ("Predicted with %s. On measurements it was not fitted to, its predictions were "
                "off by %s (median), at most %s" % (who, pct(med), pct(mx)))
        if num(f.get("points")) is not None:
            text += ", over %s points" % fmt_int(f.get("points"))
            if num(f.get("sources")) is not None:
                text += " of %s sources" % fmt_int(f.get("sources"))
        text += "."
        ins = num(get(f, "in_sample", "median_abs_error"))
        if ins is not None:
            text += ' <span class="muted">(In-sample fit: %s median, not the error to expect.)' \
                    "</span>" % pct(ins)
        cls = "fidelity"
    else:
        text = ("Predicted with %s, <b>uncalibrated</b>: these figures have not been checked "
                "against measurements of this engine and hardware." % who)
        cls = "fidelity uncalibrated"
    oor = f.get("out_of_range")
    if isinstance(oor, list) and oor:
        text += " <b>Outside the calibrated range:</b> %s." % esc("; ".join(str(x) for x in oor))
    text += ' See <a href="%s">%s</a>.' % (FIDELITY_DOC, FIDELITY_DOC)
    if f.get("summary"):
        text += '<br><span class="muted">%s</span>' % esc(f["summary"])
    return '<div class="%s">%s</div>' % (cls, text)


def margin_caution(what, margin, err):
    """A caution when a margin to an SLO bound (a share: 0.08 = 8% under) is within the stated
    error `err` ((median, max) from stated_error), else ""."""
    m = num(margin)
    if m is None or err is None or m < 0 or m >= err[1]:
        return ""
    return ('<div class="caution">%s clears its bound by %s, within the model\'s stated error '
            "(median %s, max %s): it could miss in practice.</div>" % (
                what, pct(m), pct(err[0]), pct(err[1])))
