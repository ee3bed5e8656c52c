"""An incident's verdict: onset, peak, time to recover and before / during / after figures,
from report.json's incidents and requests.csv.

Phases go by arrival time: before the fault, during it, recovering (after it ended, until the
service recovered) and recovered. Recovery is the first 10-second window of arrivals, at or
after the fault's end, from which three windows in a row are healthy: every request completed,
and as many met the SLO as before the fault (less 5 points), or, without an SLO, E2E p99 at
most 1.5x what it was before the fault.
"""

from report_charts import quantile
from report_common import dur, esc, fmt_int, num, pct

WINDOW_S = 10
HEALTHY_WINDOWS = 3


def _meets(r, bounds):
    if r.get("outcome") != "completed":
        return False
    for key in ("ttft", "tpot", "e2e"):
        b = num(bounds.get(key + "_s")) if isinstance(bounds, dict) else None
        v = num(r.get(key + "_s"))
        if b and (v is None or v > b):
            return False
    return True


def phase_figures(rows, bounds):
    """Figures of a group of requests: arrived, completed, failed, TTFT/E2E p99, attainment."""
    done = [r for r in rows if r.get("outcome") == "completed"]
    failed = sum(1 for r in rows if r.get("outcome") == "failed")
    rejected = sum(1 for r in rows if r.get("outcome") == "rejected")
    has_bounds = isinstance(bounds, dict) and any(num(v) for v in bounds.values())
    return dict(
        requests=len(rows), completed=len(done), failed=failed, rejected=rejected,
        ttft_p99=quantile([num(r.get("ttft_s")) for r in done if num(r.get("ttft_s")) is not None],
                          0.99),
        e2e_p99=quantile([num(r.get("e2e_s")) for r in done if num(r.get("e2e_s")) is not None],
                         0.99),
        attainment=(sum(1 for r in rows if _meets(r, bounds)) / len(rows))
        if rows and has_bounds else None)


def _healthy(fig, base, has_bounds):
    if fig["requests"] == 0:
        return True
    if fig["failed"] or fig["rejected"] > base.get("rejected_share", 0) * fig["requests"] + 1:
        return False
    if has_bounds and base["attainment"] is not None and fig["attainment"] is not None:
        return fig["attainment"] >= base["attainment"] - 0.05
    if base["e2e_p99"] and fig["e2e_p99"] is not None:
        return fig["e2e_p99"] <= 1.5 * base["e2e_p99"]
    return True


def analyse(inc, requests, bounds, arrivals_end):
    """The incident's verdict figures (a dict), or None without a start."""
    start, end = num(inc.get("start_s")), num(inc.get("end_s"))
    if start is None:
        return None
    if end is None or end < start:
        end = arrivals_end
    arr = lambda r: num(r.get("arrival_s"))  # noqa: E731
    rows = [r for r in requests if arr(r) is not None]
    has_bounds = isinstance(bounds, dict) and any(num(v) for v in bounds.values())
    # Requests by whole second of arrival, so a window's requests are a few bins, not a scan.
    by_second = {}
    for r in rows:
        by_second.setdefault(int(arr(r) // 1), []).append(r)

    def arrived(lo, hi):
        out = []
        for sec in range(int(lo // 1), int(-(-hi // 1))):
            out.extend(r for r in by_second.get(sec, ()) if lo <= arr(r) < hi)
        return out

    before = [r for r in rows if arr(r) < start]
    base = phase_figures(before, bounds)
    base["rejected_share"] = base["rejected"] / base["requests"] if base["requests"] else 0

    # Recovery: scan windows of arrivals from the fault's end.
    recovered = None
    t = end
    while arrivals_end is not None and t < arrivals_end:
        ok = True
        for k in range(HEALTHY_WINDOWS):
            lo, hi = t + k * WINDOW_S, t + (k + 1) * WINDOW_S
            if lo >= arrivals_end:
                break
            fig = phase_figures(arrived(lo, hi), bounds)
            if not _healthy(fig, base, has_bounds):
                ok = False
                break
        if ok:
            recovered = t
            break
        t += WINDOW_S
    stop = recovered if recovered is not None else float("inf")
    phases = [("before", before),
              ("during", [r for r in rows if start <= arr(r) < end]),
              ("recovering", [r for r in rows if end <= arr(r) < stop]),
              ("after", [r for r in rows if arr(r) >= stop])]
    figures = [(name, phase_figures(g, bounds)) for name, g in phases
               if g or name not in ("recovering", "after")]

    # Peak: the worst 10-second window of arrivals from the onset to recovery: the most failed
    # requests, then the longest E2E p99.
    peak_t, peak, rank = None, None, None
    t = start
    horizon = recovered if recovered is not None else (arrivals_end or end)
    while t < max(horizon, end):
        fig = phase_figures(arrived(t, t + WINDOW_S), bounds)
        key = (fig["failed"], fig["e2e_p99"] or 0)
        if fig["requests"] and (rank is None or key > rank):
            rank, peak, peak_t = key, fig, t
        t += WINDOW_S
    failed_total = sum(f["failed"] for _, f in figures)
    return dict(fault=inc.get("fault") or inc.get("type") or "fault", type=inc.get("type"),
                target=inc.get("target"), start=start, end=end, recovered=recovered,
                peak=peak, peak_t=peak_t, phases=figures, failed=failed_total,
                failed_inside=num(inc.get("failed_inside")), has_bounds=has_bounds,
                ongoing=inc.get("ongoing") is True)


def verdict_html(a, description=None):
    """The incident's verdict box."""
    failed = a["failed"]
    during = dict(a["phases"]).get("during", {})
    before = dict(a["phases"]).get("before", {})
    worse = failed > 0 or (
        a["has_bounds"] and during.get("attainment") is not None and
        before.get("attainment") is not None and during["attainment"] < before["attainment"] - 0.05)
    slower = (during.get("e2e_p99") is not None and before.get("e2e_p99") and
              during["e2e_p99"] > 1.5 * before["e2e_p99"])
    cls = "fail" if worse else "mixed" if slower else "ok"
    if a.get("ongoing"):
        span = "from %s, still on when the run ended" % dur(a["start"])
    else:
        span = "at %s, lasting %s" % (dur(a["start"]), dur(a["end"] - a["start"]))
    head = "%s (%s on %s) %s" % (esc(a["fault"]), esc(a["type"] or "?"), esc(a["target"] or "?"),
                                 span)
    lines = []
    if failed:
        lines.append("<b>%s requests failed</b>%s." % (
            fmt_int(failed), " (%s of those in flight during the fault)" % fmt_int(
                a["failed_inside"]) if a["failed_inside"] is not None else ""))
    else:
        lines.append("No request failed.")
    p = a["peak"]
    if p is not None:
        lines.append("Peak: of the %s requests arriving at %s&ndash;%s, %sE2E p99 %s (before the "
                     "fault: %s)." % (
                         fmt_int(p["requests"]), dur(a["peak_t"]), dur(a["peak_t"] + WINDOW_S),
                         ("<b>%s failed</b>, " % fmt_int(p["failed"])) if p["failed"] else "",
                         dur(p["e2e_p99"]), dur(before.get("e2e_p99"))))
    if a["recovered"] is not None:
        lines.append("Recovered: requests arriving from %s on are served as before the fault, "
                     "<b>%s after it ended</b> (%s after its onset)." % (
                         dur(a["recovered"]), dur(a["recovered"] - a["end"]),
                         dur(a["recovered"] - a["start"])))
    elif a.get("ongoing"):
        lines.append("No recovery to measure: the fault lasts to the end of the run.")
    else:
        lines.append("<b>Not recovered</b> by the end of the arrivals.")
    rows = []
    for name, f in a["phases"]:
        rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td>%s</td>"
                    "<td>%s</td><td>%s</td></tr>" % (
                        name, fmt_int(f["requests"]), fmt_int(f["completed"]),
                        "fail" if f["failed"] else "", fmt_int(f["failed"]), dur(f["ttft_p99"]),
                        dur(f["e2e_p99"]), pct(f["attainment"])))
    table = ("<table class=\"phases\"><tr><th>arrived</th><th>requests</th><th>completed</th>"
             "<th>failed</th><th>TTFT p99</th><th>E2E p99</th><th>SLO attainment</th></tr>%s"
             "</table>" % "".join(rows))
    desc = "<p class=\"note\">%s</p>" % esc(description) if description else ""
    return ('<div class="verdict %s incident" data-failed="%d" data-recovered="%s">'
            "<h2>%s</h2>%s<p>%s</p>%s<p class=\"note\">Phases by arrival time; recovery: the "
            "first %d-s window after the fault from which %d windows in a row are served as "
            "before it (no failure, SLO attainment within 5 points).</p></div>" % (
                cls, failed, "" if a["recovered"] is None else "%g" % a["recovered"], head, desc,
                " ".join(lines), table, WINDOW_S, HEALTHY_WINDOWS))
