"""What a simulate run's verdict is made of: the SLO per bound against its target, the offered
load and workload in words, and the limit that binds (batch cap, KV capacity, a pipeline stage,
a link, the GPUs). Pure functions of report.json, requests.csv and timeline.csv; the pages
(simulate, compare) lay them out."""

from report_charts import finite
from report_common import esc, fmt, fmt_int, get, num, pct, dur

METRICS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E"))


def slo_target(report):
    """(target share, where it came from): report.json slo.target, else 0.99."""
    t = num(get(report, "slo", "target"))
    if t is None or not 0 < t <= 1:
        return 0.99, "default"
    return t, get(report, "slo", "target_source", default="scenario")


def within_share(requests, metric, bound, submitted):
    """Share of submitted requests that completed with `metric` within `bound` (failed and
    rejected requests count as outside)."""
    if not submitted:
        return None
    ok = 0
    for r in requests:
        if r.get("outcome") != "completed":
            continue
        v = num(r.get(metric + "_s"))
        if v is not None and v <= bound:
            ok += 1
    return ok / submitted


def slo_rows(report, requests):
    """One dict per bound the scenario sets: metric, label, bound, p99, within, margin, met."""
    bounds = get(report, "slo", "bounds", default={}) or {}
    target, _ = slo_target(report)
    submitted = num(get(report, "requests", "submitted")) or len(requests)
    rows = []
    for key, label in METRICS:
        b = num(bounds.get(key + "_s")) if isinstance(bounds, dict) else None
        if b is None or b <= 0:
            continue
        p99 = num(get(report, "latency_s", key, "p99"))
        share = within_share(requests, key, b, submitted) if requests else None
        margin = (b - p99) / b if p99 is not None else None
        met = share >= target if share is not None else (p99 is not None and p99 <= b)
        rows.append(dict(metric=key, label=label, bound=b, p99=p99, within=share,
                         margin=margin, met=met))
    return rows


def slo_met(report):
    """True/False: attainment against the target; None when the run sets no bound."""
    bounds = get(report, "slo", "bounds", default={}) or {}
    if not any(num(v) for v in (bounds.values() if isinstance(bounds, dict) else [])):
        return None
    att = num(get(report, "slo", "attainment"))
    target, _ = slo_target(report)
    return att is not None and att >= target


def distribution_words(d):
    """A token-length distribution of the scenario in words."""
    if num(d) is not None:
        return "%s tokens" % fmt_int(d)
    if not isinstance(d, dict):
        return "?"
    kind = d.get("type", "?")
    parts = []
    for key, label in (("median", "median"), ("mean", "mean"), ("value", ""), ("min", "min"),
                       ("max", "max")):
        if num(d.get(key)) is not None:
            parts.append(("%s %s" % (label, fmt_int(d[key]))).strip())
    return "%s%s" % (esc(kind), (" (%s)" % ", ".join(parts)) if parts else "")


def arrival_words(a):
    if not isinstance(a, dict):
        return "?"
    kind = a.get("type", "?")
    if kind == "poisson" and num(a.get("rate_rps")) is not None:
        return "Poisson arrivals at %s req/s" % fmt(a["rate_rps"], "g")
    if kind == "poisson":
        return "Poisson arrivals following a rate profile"
    if kind == "gamma":
        return "bursty (gamma, CV %s) arrivals at %s req/s" % (fmt(a.get("cv"), "g"),
                                                               fmt(a.get("rate_rps"), "g"))
    if kind == "constant":
        return "evenly spaced arrivals at %s req/s" % fmt(a.get("rate_rps"), "g")
    if kind == "closed_loop":
        return "%s closed-loop users (think time %s)" % (fmt_int(a.get("users")),
                                                         esc(a.get("think_time_s", "0")))
    if kind == "trace":
        return "a %s trace (%s)" % (esc(a.get("format", "")), esc(a.get("path", "")))
    return esc(kind)


def mean_of(requests, col):
    vals = finite([num(r.get(col)) for r in requests])
    return sum(vals) / len(vals) if vals else None


def load_words(report, requests):
    """(offered load, workload) sentences."""
    spec = get(report, "workload", "spec", default={}) or {}
    duration = num(get(report, "workload", "duration_s"))
    submitted = num(get(report, "requests", "submitted"))
    offered = "%s" % arrival_words(spec.get("arrival"))
    if duration:
        offered += " for %s" % dur(duration)
    if submitted is not None and duration:
        offered += ": %s requests, %s req/s offered" % (fmt_int(submitted),
                                                        fmt(submitted / duration, ".3g"))
    work = "prompts %s, outputs %s" % (distribution_words(spec.get("prompt_tokens")),
                                       distribution_words(spec.get("output_tokens")))
    mp, mo = mean_of(requests, "prompt_tokens"), mean_of(requests, "output_tokens")
    if mp is not None and mo is not None:
        work += "; drawn: %s prompt and %s output tokens on average" % (fmt(mp, ".0f"),
                                                                        fmt(mo, ".0f"))
    return offered, work


def running_cap_words(dep):
    cap = num(dep.get("max_running_per_replica"))
    mb, pp = num(dep.get("micro_batch")), num(dep.get("pipeline_parallel"))
    if cap is None:
        return None, ""
    if mb and pp and pp > 1 and cap == mb * pp:
        return cap, "micro-batch %d &times; %d pipeline stages = %d per replica" % (mb, pp, cap)
    return cap, "max_num_seqs %d per replica" % cap


def stage_utilization(report):
    """{stage: mean utilization} over the deployment's GPUs (one entry per pipeline stage)."""
    acc = {}
    for g in get(report, "gpus", "per_gpu", default=[]) or []:
        if isinstance(g, dict) and num(g.get("utilization")) is not None:
            acc.setdefault(int(num(g.get("stage")) or 0), []).append(g["utilization"])
    return {s: sum(v) / len(v) for s, v in sorted(acc.items())}


def queued_share(timeline):
    """Share of the run's seconds in which some request was waiting."""
    waiting = [num(r.get("waiting")) or 0 for r in timeline]
    return sum(1 for w in waiting if w > 0) / len(waiting) if waiting else 0


def binding_limits(report, timeline):
    """What limits the run, most binding first: [(name, evidence, cap_line)] where cap_line is
    (chart, y, label) to draw on a chart ("running", "kv", "links") or None. Empty: nothing
    binds (headroom)."""
    col = lambda name: [num(r.get(name)) for r in timeline]  # noqa: E731
    dep = get(report, "deployment", default={}) or {}
    out = []
    cap, cap_text = running_cap_words(dep)
    running, up = col("running"), col("replicas_up")
    n = len(timeline)
    if cap and n:
        at_cap = sum(1 for r, u in zip(running, up)
                     if r is not None and u and r >= 0.95 * cap * u)
        if at_cap >= max(3, 0.05 * n) and queued_share(timeline) > 0:
            out.append(("batch cap", "running requests at the cap (%s) for %s of the run while "
                        "requests waited" % (cap_text, pct(at_cap / n)),
                        ("running", cap * (max(finite(up)) if finite(up) else 1),
                         "cap %d" % (cap * (max(finite(up)) if finite(up) else 1)))))
    peak_kv = num(get(report, "kv_cache", "peak_usage"))
    pre = num(get(report, "preemptions")) or 0
    if (peak_kv is not None and peak_kv >= 0.95) or pre > 0:
        out.append(("KV capacity", "KV cache peaked at %s of %s tokens per replica%s" % (
            pct(peak_kv), fmt_int(get(report, "kv_cache", "tokens_per_replica")),
            ", %s preemptions" % fmt_int(pre) if pre else ""), ("kv", 1.0, "KV capacity")))
    stages = stage_utilization(report)
    if len(stages) > 1:
        hi = max(stages, key=stages.get)
        lo = min(stages, key=stages.get)
        if stages[hi] >= 0.8 and stages[hi] >= 1.15 * stages[lo]:
            out.append(("pipeline stage %d" % hi, "stage %d busy %s against stage %d at %s: the "
                        "busiest stage sets the pace of every micro-batch" % (
                            hi, pct(stages[hi]), lo, pct(stages[lo])), None))
    links = [c for c in (timeline[0].keys() if timeline else []) if c.startswith("util_")]
    for c in links:
        mx = max(finite(col(c)) or [0])
        if mx >= 0.9:
            out.append(("link %s" % c[5:], "%s at %s of its bandwidth at peak" % (
                esc(c[5:]), pct(mx)), ("links", 1.0, "link capacity")))
    gmax = num(get(report, "gpus", "utilization_max"))
    if gmax is not None and gmax >= 0.9 and not any(o[0].startswith("pipeline") for o in out):
        out.append(("GPU compute", "the busiest GPU was busy %s of the run" % pct(gmax), None))
    return out


def headroom_words(report, timeline):
    """Why nothing binds: the peaks against their limits."""
    dep = get(report, "deployment", default={}) or {}
    cap, cap_text = running_cap_words(dep)
    running = finite([num(r.get("running")) for r in timeline])
    parts = []
    if cap and running:
        parts.append("at most %s requests running against a cap of %s" % (
            fmt_int(max(running)), cap_text))
    if num(get(report, "gpus", "utilization_max")) is not None:
        parts.append("the busiest GPU %s busy" % pct(get(report, "gpus", "utilization_max")))
    if num(get(report, "kv_cache", "peak_usage")) is not None:
        parts.append("KV cache peak %s" % pct(get(report, "kv_cache", "peak_usage")))
    return "; ".join(parts)
