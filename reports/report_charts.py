"""Time-series charts shared by the simulate, incident and comparison pages.

Every timeline chart has the same size and the same plot-area margins (no tight bounding box),
so charts stacked on a page, or two runs side by side, line up on their time axes. A chart
whose series are all constant is not drawn: the caller states the constant in one line
instead (`flat_note`). Each chart's <div> carries `data-series` (label:min:max per series) so a
test can check that no drawn series is constant.
"""

import math

from report_common import COLORS, FAULT_COLORS, esc, fmt, nan_none, num, svg_of, thin

# One size for every timeline: width, height (inches) and plot-area margins (figure share).
TIMELINE_SIZE = (9.5, 2.4)
TIMELINE_MARGINS = dict(left=0.075, right=0.80, top=0.86, bottom=0.2)
LINE_STYLES = ["-", "--", ":", "-."]
SMOOTH_S = 10  # moving-average window of per-second counts


def finite(ys):
    return [v for v in ys if v is not None and not (isinstance(v, float) and math.isnan(v))]


def is_flat(ys, tol=1e-9):
    """True when a series has no data or never changes."""
    vals = finite(ys)
    return not vals or max(vals) - min(vals) <= tol * max(1.0, abs(max(vals)))


def moving_average(ys, window=SMOOTH_S):
    """Trailing moving average over `window` points (None counts as 0)."""
    out, acc, q = [], 0.0, []
    for v in ys:
        x = v or 0.0
        q.append(x)
        acc += x
        if len(q) > window:
            acc -= q.pop(0)
        out.append(acc / len(q))
    return out


def flat_note(label, ys, unit=""):
    """'replicas up: 3 throughout' for a constant series, 'none' when it is all zero."""
    vals = finite(ys)
    if not vals or all(v == 0 for v in vals):
        return "%s: none" % esc(label)
    return "%s: %s%s throughout" % (esc(label), fmt(vals[0], "g"), unit)


def incident_windows(report, t_end):
    """[(start, end, label, color)] of report.json's incidents."""
    out = []
    incidents = report.get("incidents") if isinstance(report, dict) else None
    for i, inc in enumerate(incidents or []):
        if not isinstance(inc, dict):
            continue
        start, end = num(inc.get("start_s")), num(inc.get("end_s"))
        if start is None:
            continue
        if end is None or end < start:
            end = t_end if t_end is not None else start
        label = str(inc.get("fault") or inc.get("type") or "fault #%d" % i)
        out.append((start, end, label, FAULT_COLORS[i % len(FAULT_COLORS)]))
    return out


def shade(ax, windows):
    """Shades every fault window; its label sits above the plot area, clear of the data and
    of any bound line."""
    for k, (start, end, label, color) in enumerate(windows):
        ax.axvspan(start, end, color=color, alpha=0.12, lw=0)
        ax.annotate(label, xy=(start, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(1, 2 + 9 * (k % 2)), textcoords="offset points",
                    va="bottom", ha="left", fontsize=7, color=color)


def timeline_chart(plt, t, series, ylabel, windows, title, hlines=(), ylim=None, x_max=None,
                   share=False, styles=None):
    """A chart of series [(label, values)] over simulated seconds t, or "" when every series
    is constant. hlines: [(y, label, color)] bound or cap lines. share: values are shares in
    [0, 1] (axis 0..105%). x_max: the time axis' end (to align charts of different runs).
    styles: {label: (color, linestyle, alpha)} for series that must look alike (a comparison's
    before and after); others get the next colour and line style."""
    present = [(lab, ys) for lab, ys in series if not is_flat(ys)]
    styles = styles or {}
    if not present or not t:
        return ""
    xs, cols = thin(t, [nan_none(ys) for _, ys in present])
    fig = plt.figure(figsize=TIMELINE_SIZE)
    fig.subplots_adjust(**TIMELINE_MARGINS)
    ax = fig.add_subplot(1, 1, 1)
    lo = math.inf
    for k, ((lab, _), ys) in enumerate(zip(present, cols)):
        color, ls, alpha = styles.get(lab, (COLORS[k % len(COLORS)],
                                            LINE_STYLES[k % len(LINE_STYLES)], 1.0))
        ax.plot(xs, ys, lw=1.2, label=lab, color=color, ls=ls, alpha=alpha)
        lo = min([lo] + finite(ys))
    for y, lab, color in hlines:
        if num(y) is not None:
            ax.axhline(y, color=color, ls="--", lw=1, label=lab)
    shade(ax, windows)
    end = x_max if x_max is not None else max(xs[-1], max((w[1] for w in windows), default=0))
    ax.set_xlim(0, end)
    if share:
        ax.set_ylim(0, 1.05)
        ax.yaxis.set_major_formatter(percent_formatter())
    elif ylim:
        ax.set_ylim(*ylim)
    elif lo >= 0:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("simulated time (s)")
    ax.set_title(title, loc="left", fontsize=9, pad=14 if windows else 6)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return chart_div(plt, fig, present, tight=False)


def chart_div(plt, fig, series, tight=True):
    """The figure as inline SVG in a <div class="chart"> carrying data-series (label:min:max of
    each series), which the tests read to check that no drawn series is constant."""
    data = ";".join("%s:%s:%s" % (esc(lab).replace(";", ","), fmt(min(finite(ys)), ".6g"),
                                  fmt(max(finite(ys)), ".6g")) for lab, ys in series if finite(ys))
    return svg_of(plt, fig, tight=tight).replace('<div class="chart">',
                                                 '<div class="chart" data-series="%s">' % data, 1)


def percent_formatter():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _pos: "%d%%" % round(v * 100))


def per_second(rows, time_col, value_col, t_end, q=0.99):
    """The q-quantile of value_col over the rows whose time_col falls in each simulated second
    (1-based, the window [t-1, t)), None for seconds without any."""
    n = int(math.ceil(t_end)) if t_end else 0
    bins = [[] for _ in range(n)]
    for r in rows:
        t, v = num(r.get(time_col)), num(r.get(value_col))
        if t is None or v is None or t < 0:
            continue
        i = min(int(t), n - 1) if n else 0
        if n:
            bins[i].append(v)
    return [quantile(b, q) if b else None for b in bins]


def quantile(vals, q):
    """Linear interpolation between ranks (numpy's default, as report.json)."""
    vals = sorted(vals)
    if not vals:
        return None
    pos = q * (len(vals) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)
