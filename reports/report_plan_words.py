"""The plan page's words: plan.json read defensively, each configuration spelled out
("prefill 4 × TP1 on H200 + decode 1 × TP4 on H100 (8 GPUs: 4 H200 + 4 H100)"), the model, the
SLO and the question asked, margins and violations in words, and the fidelity per GPU the
margins are judged against."""

import json
import os
import re

from report_common import (config_label, dur, esc, fmt, fmt_int, get, margin_caution, num, pct,
                           stated_error, table)

TOP_ROWS = 10          # rows of a long table shown; the rest folded in a <details>
MAX_CURVES = 8         # configurations drawn on a rate-sweep chart
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINE_STYLES = ["-", "--", "-.", ":"]
MINUS = "\u2212"
LATENCIES = (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "E2E"))


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


def dict_of(x):
    return x if isinstance(x, dict) else {}


def dicts(x):
    return [e for e in x if isinstance(e, dict)] if isinstance(x, list) else []


def int_of(d, k, default=1):
    v = num(dict_of(d).get(k))
    return int(v) if v is not None else default


def ident(e):
    """What identifies a configuration across plan.json and results.jsonl: its key, else its
    config (files written before keys were recorded)."""
    if not isinstance(e, dict):
        return str(e)
    if isinstance(e.get("key"), str):
        return e["key"]
    return config_label(e.get("config")) if "config" in e else "?"


def text_of(x):
    return x if isinstance(x, str) and x else None


def gpus_of(e):
    return num(dict_of(e).get("gpus")) or num(get(e, "config", "gpus"))


def slo_bound(slo, *names):
    """A bound from the plan's SLO, whatever the spelling: e2e_s, e2e, p99_e2e_s, ..."""
    if not isinstance(slo, dict):
        return None
    for k, v in sorted(slo.items()):
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


def metrics_of(e):
    """A plan entry's or a results line's metrics, flat: ttft_p99_s, tpot_p99_s, e2e_p99_s,
    attainment, goodput_rps, ... (results written before "metrics" carry a "report")."""
    m = dict_of(dict_of(e).get("metrics"))
    rep = dict_of(dict_of(e).get("report"))
    out = {}
    nested = {"ttft_p99_s": ("latency_s", "ttft", "p99"),
              "tpot_p99_s": ("latency_s", "tpot", "p99"),
              "e2e_p99_s": ("latency_s", "e2e", "p99"), "attainment": ("slo", "attainment"),
              "goodput_rps": ("slo", "goodput_rps"), "completed": ("requests", "completed")}
    for k in ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "attainment", "goodput_rps", "completed",
              "tpot_mean_s", "output_tokens_per_s"):
        v = num(m.get(k))
        if v is None and k in nested:
            v = num(get(rep, *nested[k]))
        if v is not None:
            out[k] = v
    if "attainment" not in out and num(dict_of(e).get("best_attainment")) is not None:
        out["attainment"] = num(e["best_attainment"])
    return out


def read_scenario(path, d):
    """The base scenario (for its model and quantization) when plan.json names a JSON file
    that can be found: relative to where the plan ran (the current directory) or to DIR."""
    if not isinstance(path, str) or not path.endswith(".json"):
        return None
    for p in ([path] if os.path.isabs(path) else [path, os.path.join(d, path)]):
        if os.path.isfile(p):
            try:
                with open(p, encoding="utf-8") as f:
                    v = json.load(f)
                return v if isinstance(v, dict) else None
            except (OSError, UnicodeDecodeError, ValueError):
                return None
    return None


def pretty_model(name):
    """'llama-3-70b' -> 'Llama-3-70B' (names already capitalised are kept)."""
    if not isinstance(name, str) or not name:
        return ""
    if any(c.isupper() for c in name):
        return name
    parts = []
    for p in name.split("-"):
        if re.fullmatch(r"[0-9.]+(x[0-9.]+)?[bmk]", p):
            parts.append(p[:-1] + p[-1].upper())
        elif re.fullmatch(r"[a-z][0-9]+[a-z]?", p):
            parts.append(p.upper())
        elif p[:1].isalpha():
            parts.append(p[:1].upper() + p[1:])
        else:
            parts.append(p)
    return "-".join(parts)


def pretty_quant(q):
    return q.upper() if isinstance(q, str) and q else ""


def plan_model(plan, d, pruned):
    """(model name, quantization) of the plan: plan.json's "model" where it has one, else the
    base scenario's, else what a memory prune names ("does not fit: Llama-3-70B fp8 on ...")."""
    name = quant = None
    m = plan.get("model")
    if isinstance(m, dict):
        name, quant = m.get("name") or m.get("id"), m.get("quantization")
    elif isinstance(m, str):
        name = m
    if isinstance(plan.get("quantization"), str):
        quant = quant or plan["quantization"]
    if not name or not quant:
        scen = plan.get("scenario")
        s = scen if isinstance(scen, dict) else read_scenario(scen, d)
        if isinstance(s, dict):
            sm = s.get("model")
            name = name or (sm if isinstance(sm, str) else dict_of(sm).get("name"))
            quant = quant or (s.get("quantization") if isinstance(s.get("quantization"), str)
                              else None)
    if not name or not quant:
        for p in pruned:
            hit = re.search(r"fit: (\S+) ([a-z0-9_]+) on \d+x ", str(p.get("reason", "")))
            if hit:
                name, quant = name or hit.group(1), quant or hit.group(2)
                break
    return pretty_model(name) if isinstance(name, str) else "", \
        pretty_quant(quant) if isinstance(quant, str) else ""


def signed_pct(share):
    """+6.8%, −12%, +909%: a signed relative difference."""
    v = num(share)
    if v is None:
        return "&ndash;"
    a = abs(v) * 100
    return ("+" if v >= 0 else MINUS) + ("%.0f%%" % a if a >= 100 else "%.1f%%" % a)


def share_words(x):
    """99%, 98.95%: an attainment (two decimals unless whole)."""
    v = num(x)
    if v is None:
        return "&ndash;"
    return ("%g%%" % round(v * 100, 2)) if abs(v * 100 - round(v * 100)) < 1e-9 else \
        "%.2f%%" % (v * 100)


def topology_words(t):
    """'h200_node{nodes=2}' -> 'h200_node × 2 nodes'."""
    m = re.fullmatch(r"(.+?)\{(.*)\}", t or "")
    if not m:
        return t
    kv = dict(p.split("=", 1) for p in m.group(2).split(",") if "=" in p)
    if set(kv) == {"nodes"}:
        return "%s × %s nodes" % (m.group(1), kv["nodes"])
    return "%s (%s)" % (m.group(1), ", ".join("%s %s" % (k, v) for k, v in sorted(kv.items())))


class Namer:
    """Spells out plan configurations in words, consistently for the whole page: GPU names
    short where that stays unambiguous, the topology and quantization only where the plan
    searched them, and the GPU counts adding up (replicas × TP × PP × DP per pool)."""

    def __init__(self, plan, results):
        entries = []
        for k in ("ranked", "failed_slo", "pruned"):
            entries += dicts(plan.get(k))
        t = dict_of(plan.get("target"))
        entries += [t[k] for k in ("fewest_gpus", "lowest_cost", "runner_up")
                    if isinstance(t.get(k), dict)]
        entries += results
        self.by_key = {}
        gpus, topologies, quants = set(), set(), set()
        for e in entries:
            cfg = e.get("config")
            if not isinstance(cfg, dict):
                continue
            if isinstance(e.get("key"), str):
                self.by_key.setdefault(e["key"], cfg)
            for g in (cfg.get("gpu"), get(cfg, "prefill", "gpu"), get(cfg, "decode", "gpu")):
                if isinstance(g, str):
                    gpus.add(g)
            if isinstance(cfg.get("topology"), str):
                topologies.add(cfg["topology"])
            if isinstance(cfg.get("quantization"), str):
                quants.add(cfg["quantization"])
        for g in dict_of(plan.get("fidelity")):
            gpus.add(g.split(" on ")[-1])
        self.short = {}
        firsts = [g.split("-")[0] for g in gpus]
        for g in gpus:
            s = g.split("-")[0]
            self.short[g] = s if s and firsts.count(s) == 1 else g
        self.multi_topology = len(topologies) > 1
        self.quants = sorted(quants)
        # Two configurations must never read the same: where they would, the key is added.
        seen = {}
        for key, cfg in sorted(self.by_key.items()):
            seen.setdefault(self._words(cfg, None, False), []).append(key)
        self.ambiguous = {k for keys in seen.values() if len(keys) > 1 for k in keys}

    def gpu(self, g):
        return self.short.get(g, g) if isinstance(g, str) else ""

    def config_of(self, e):
        e = dict_of(e)
        if isinstance(e.get("config"), dict):
            return e["config"]
        return self.by_key.get(e["key"]) if isinstance(e.get("key"), str) else None

    def pools(self, cfg):
        """[(role, replicas, tp, gpu, gpus)]: one entry colocated, two disaggregated."""
        tp, pp, dp = (int_of(cfg, k) for k in ("tensor_parallel", "pipeline_parallel",
                                               "data_parallel"))
        reps, gpu = int_of(cfg, "replicas"), text_of(cfg.get("gpu"))
        pre, dec = dict_of(cfg.get("prefill")), dict_of(cfg.get("decode"))
        if cfg.get("disaggregation") is True and (pre or dec):
            return [("prefill", int_of(pre, "replicas"), int_of(pre, "tensor_parallel"),
                     text_of(pre.get("gpu")) or gpu),
                    ("decode", int_of(dec, "replicas"), int_of(dec, "tensor_parallel"),
                     text_of(dec.get("gpu")) or gpu)], pp, dp
        if cfg.get("disaggregation") is True:
            return [("prefill", reps // 2, tp, gpu), ("decode", reps - reps // 2, tp, gpu)], pp, dp
        return [("", reps, tp, gpu)], pp, dp

    def gpu_counts(self, cfg):
        pools, pp, dp = self.pools(cfg)
        counts = {}
        for _, r, t, g in pools:
            counts[g] = counts.get(g, 0) + r * t * pp * dp
        return counts

    def _words(self, cfg, model, disambiguate=True, key=None):
        pools, pp, dp = self.pools(cfg)

        def shape(t):
            return ("TP%d" % t + (" × PP%d" % pp if pp > 1 else "") +
                    (" × DP%d" % dp if dp > 1 else ""))

        def on(g):
            return " on %s" % self.gpu(g) if g else ""
        if len(pools) == 1:
            _, r, t, g = pools[0]
            text = "%d replica%s × %s%s" % (r, "" if r == 1 else "s", shape(t), on(g))
        elif pools[0][3] == pools[1][3]:
            text = "prefill %d × %s + decode %d × %s%s" % (
                pools[0][1], shape(pools[0][2]), pools[1][1], shape(pools[1][2]), on(pools[0][3]))
        else:
            text = " + ".join("%s %d × %s%s" % (role, r, shape(t), on(g))
                              for role, r, t, g in pools)
        counts = self.gpu_counts(cfg)
        total = sum(counts.values())
        order = []
        for _, _, _, g in pools:
            if g not in order:
                order.append(g)
        if len(counts) > 1:
            gtext = "%d GPUs: %s" % (total, " + ".join("%d %s" % (counts[g], self.gpu(g))
                                                        for g in order))
        else:
            gtext = "%d GPU%s" % (total, "" if total == 1 else "s")
        declared = num(cfg.get("gpus"))
        if declared is not None and int(declared) != total:
            gtext += "; plan.json counts %d" % int(declared)
        text += " (%s)" % gtext
        extras = []
        if self.multi_topology and isinstance(cfg.get("topology"), str):
            extras.append("topology " + topology_words(cfg["topology"]))
        for k in sorted(cfg):
            v = cfg[k]
            if k in ("tensor_parallel", "pipeline_parallel", "data_parallel", "replicas", "gpu",
                     "gpus", "prefill", "decode", "disaggregation", "topology", "quantization"):
                continue
            if k == "max_num_seqs" and num(v) is not None:
                extras.append("at most %s sequences" % fmt_int(v))
            elif k == "max_num_batched_tokens" and num(v) is not None:
                extras.append("%s tokens per step" % fmt_int(v))
            elif k == "priority_scheduling" and isinstance(v, bool):
                extras.append("priority scheduling" if v else "first-come first-served")
            elif k in ("engines", "engine") and isinstance(v, str):
                extras.append("%s engine" % v)
            elif k == "expert_parallel" and num(v) is not None:
                extras.append("experts in %d groups (EP)" % int(v) if int(v) > 1
                              else "no expert parallelism")
            elif k == "expert_tensor_parallel" and num(v) is not None:
                extras.append("each expert over %d GPUs" % int(v))
            elif k == "context_parallel" and num(v) is not None:
                extras.append("context parallel %d" % int(v))
            elif k == "speculative":
                s = dict_of(v)
                extras.append("speculative decoding %s, %s tokens at %s acceptance" % (
                    s.get("method", "?"), s.get("num_tokens", "?"), s.get("acceptance_rate", "?"))
                    if s else "no speculative decoding")
            elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
                extras.append("%s %s" % (k.replace("_", " "), v))
            elif isinstance(v, bool):
                extras.append(("" if v else "no ") + k.replace("_", " "))
        quant = cfg.get("quantization") if isinstance(cfg.get("quantization"), str) else None
        if model is not None:  # the answer: the model and its quantization
            label = " ".join(x for x in (model[0], pretty_quant(quant) or model[1]) if x)
            if label:
                extras.append(label)
        elif quant and len(self.quants) > 1:
            extras.append(pretty_quant(quant))
        if extras:
            text += ", " + ", ".join(extras)
        if disambiguate and key in self.ambiguous:
            text += " [%s]" % key
        return text

    def words(self, e, model=None):
        """A configuration in words (plain text), from a plan entry, a results line or a key;
        `model` = (name, quantization) appends the model (for the answer)."""
        if isinstance(e, str):
            e = {"key": e}
        cfg = self.config_of(e)
        if not isinstance(cfg, dict):
            return ident(e)
        return self._words(cfg, model, True, text_of(dict_of(e).get("key")))

    def cell(self, e, model=None):
        """The words as HTML, the planner's key (or config label) as a tooltip."""
        return '<span title="%s">%s</span>' % (esc(ident(e if isinstance(e, dict) else {"key": e})),
                                               esc(self.words(e, model)))


def slo_words(bounds, att):
    parts = ["%s p99 &le; %s" % (label, dur(bounds[k])) for k, label in LATENCIES if bounds[k]]
    text = ", ".join(parts) if parts else "no latency bound"
    if att is not None:
        text += ", for %s of requests" % share_words(att)
    return text


class Trust:
    """Which fidelity entry speaks for a configuration's metric: TTFT is the prefill pool's
    GPU, TPOT the decode pool's, E2E the less certain of the two."""

    def __init__(self, fidelity, namer):
        self.fidelity, self.namer = fidelity, namer

    def entry(self, gpu, engine):
        if engine and ("%s on %s" % (engine, gpu)) in self.fidelity:
            return self.fidelity["%s on %s" % (engine, gpu)]
        return self.fidelity.get(gpu) if isinstance(gpu, str) else None

    def for_metric(self, e, metric):
        cfg = self.namer.config_of(e)
        if not isinstance(cfg, dict):
            return None
        engine = cfg.get("engines") or cfg.get("engine")
        pools, _, _ = self.namer.pools(cfg)
        if metric == "ttft":
            gpus = [pools[0][3]]
        elif metric == "tpot":
            gpus = [pools[-1][3]]
        else:
            gpus = [p[3] for p in pools]
        best = None
        for g in gpus:
            f = self.entry(g, engine)
            err = stated_error(f, metric)
            if best is None or (err is not None and (best[1] is None or err[1] > best[1][1])):
                best = (f, err)
        return best[0] if best else None

    def error_text(self, e):
        """'9.9% (max 22.0%)' for the ranking's column: the least certain GPU of the config."""
        cfg = self.namer.config_of(e)
        if not isinstance(cfg, dict):
            return "&ndash;"
        engine = cfg.get("engines") or cfg.get("engine")
        worst, any_entry = None, False
        for g in self.namer.gpu_counts(cfg):
            f = self.entry(g, engine)
            any_entry = any_entry or isinstance(f, dict)
            err = stated_error(f)
            if isinstance(f, dict) and err is None:
                return "uncalibrated"
            if err is not None and (worst is None or err[1] > worst[1]):
                worst = err
        if worst is None:
            return "uncalibrated" if any_entry else "&ndash;"
        return "%s (max %s)" % (pct(worst[0]), pct(worst[1]))

    def cautions(self, who, e, bounds):
        m = metrics_of(e)
        out = []
        for k, label in LATENCIES:
            b, v = bounds[k], m.get(k + "_p99_s")
            if not b or v is None:
                continue
            c = margin_caution("%s's %s p99 (%s against the %s bound)" % (
                esc(who), label, dur(v), dur(b)), 1 - v / b,
                stated_error(self.for_metric(e, k), k))
            if c:
                out.append(c)
        return out


def margin_text(m, bounds, att):
    """'TTFT p99 1.68 s against 2 s (16% under); ...; 99.48% of requests met every bound (99%
    asked)' for an entry's metrics."""
    parts = []
    for k, label in LATENCIES:
        b, v = bounds[k], m.get(k + "_p99_s")
        if b and v is not None:
            share = 1 - v / b
            parts.append("%s p99 %s against %s (%s)" % (
                label, dur(v), dur(b), ("%.0f%% under" % (share * 100)) if share >= 0
                else "%s over" % signed_pct(-share)))
    if m.get("attainment") is not None:
        parts.append("%s of requests met every bound%s" % (
            share_words(m["attainment"]),
            (" (%s asked)" % share_words(att)) if att is not None else ""))
    return "; ".join(parts)


def violation_words(e, bounds, att):
    """What an entry that failed the SLO violated, and by how much, in words."""
    m = metrics_of(e)
    out = []
    for k, label in LATENCIES:
        b, v = bounds[k], m.get(k + "_p99_s")
        if b and v is not None and v > b:
            out.append("%s p99 %s over the %s bound (%s)" % (label, dur(v), dur(b),
                                                            signed_pct(v / b - 1)))
    a = m.get("attainment")
    if a is not None and att is not None and a < att - 1e-12:
        out.append("%s of requests met every bound, %s asked (%s%.2f points)" % (
            share_words(a), share_words(att), MINUS, (att - a) * 100))
    if m.get("completed") == 0:
        out.append("no request completed")
    if not out:
        v = dict_of(e).get("violations")
        out = [esc(x) for x in v if isinstance(x, str)] if isinstance(v, list) else []
    return out or ["missed the SLO"]


def energy_text(e):
    """", 0.42 kWh per million output tokens (2,810 W at 63% busy)" for a plan entry, or ""."""
    kwh = num(e.get("energy_kwh_per_million_tokens"))
    if kwh is None:
        return ""
    return ", %s kWh per million output tokens (%s W at %s%% busy)" % (
        fmt(kwh, ".3f"), fmt_int(e.get("power_watts")),
        fmt((num(e.get("gpu_utilization")) or 0) * 100, ".0f"))


def cost_per_hour(e):
    c = num(e.get("cost_per_hour"))
    if c is None:
        p, g = num(e.get("price_per_gpu_hour")), gpus_of(e)
        c = p * g if p is not None and g is not None else None
    return c


def economics_lines(plan):
    """Where the cost and energy figures come from: the price table and each GPU's sources."""
    econ = plan.get("economics") if isinstance(plan.get("economics"), dict) else None
    if not econ or not isinstance(econ.get("gpus"), dict) or not econ["gpus"]:
        return []
    out = ['<p class="note">Cost and energy from %s (power: idle + (peak &minus; idle) &times; the '
           'simulated busy fraction; peak is the board power, an upper bound for memory-bound '
           'decode):</p><ul class="note">' % esc(econ.get("price_table", "?"))]
    for gpu in sorted(econ["gpus"]):
        g = dict_of(econ["gpus"][gpu])
        out.append("<li>%s: $%s per GPU-hour (%s); %s&ndash;%s W (%s)</li>" % (
            esc(gpu), fmt(g.get("price_per_gpu_hour"), ".2f"), esc(g.get("price_source", "")),
            fmt(g.get("idle_watts"), ".0f"), fmt(g.get("peak_watts"), ".0f"),
            esc(g.get("power_source", ""))))
    out.append("</ul>")
    return out


def folded_command(r):
    """The command that reruns a configuration (or its overrides), folded away."""
    sets = r.get("sets") if isinstance(r.get("sets"), list) else []
    if not sets and not r.get("command"):
        return ""
    text = r.get("command") or " ".join("--set %s" % x for x in sets)
    if not isinstance(text, str):
        return ""
    return "<details><summary>command</summary><code>%s</code></details>" % esc(text)


def folded_table(headers, rows, cls, what):
    """The first TOP_ROWS rows, the rest under a <details>."""
    out = [table(headers, rows[:TOP_ROWS], cls)]
    if len(rows) > TOP_ROWS:
        out.append("<details><summary>%d more %s</summary>%s</details>" % (
            len(rows) - TOP_ROWS, what, table(headers, rows[TOP_ROWS:], cls + " more")))
    return "\n".join(out)


def th(label, field=None):
    return '<span title="plan.json %s">%s</span>' % (esc(field), label) if field else label


def question(plan, model, namer, bounds, att, target_rate):
    """One sentence under the h1: what was asked."""
    if len(namer.quants) > 1:
        who = (model[0] + " " if model[0] else "") + "(quantization searched: %s)" % ", ".join(
            pretty_quant(q) for q in namer.quants)
    else:
        who = " ".join(x for x in (model[0], pretty_quant(namer.quants[0]) if namer.quants
                                   else model[1]) if x)
    rate = dict_of(plan.get("rate"))
    if target_rate is not None:
        ask = ("Which configuration serves <b>%s req/s</b> with the <b>fewest GPUs</b> (then the "
               "lowest cost per hour), within %s?" % (fmt(target_rate, "g"),
                                                     slo_words(bounds, att)))
    else:
        lo, hi = num(rate.get("min_rps")), num(rate.get("max_rps"))
        span = ""
        if lo is not None:
            span = " (rates searched from %s req/s%s)" % (
                fmt(lo, "g"), (" to %s" % fmt(hi, "g")) if hi is not None else " up")
        ask = ("Which configuration serves the most requests per second <b>per GPU</b> (goodput "
               "per GPU) within %s%s?" % (slo_words(bounds, att), span))
    text = (esc(who) + ": " if who else "") + ask
    counts = []
    if num(plan.get("configurations")) is not None:
        counts.append("%s configurations" % fmt_int(plan.get("configurations")))
    if num(plan.get("searched")) is not None:
        counts.append("%s simulated" % fmt_int(plan.get("searched")))
    if plan.get("pruned") is not None:
        counts.append("%s pruned" % fmt_int(len(dicts(plan.get("pruned")))))
    if counts:
        text += " " + ", ".join(counts) + "."
    return '<p class="question">%s</p>' % text
