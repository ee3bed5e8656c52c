"""The `prima plan` page (plan.json, results.jsonl).

It reads top-down as the decision is made: the question asked (model, SLO, target, what is
optimised), the answer with its margins and how far the model can be trusted there, one
ranking whose first row is the answer (its order stated), then the curves, why the others
failed (the violated bound and by how much) and why some were never simulated (grouped).
Configurations are named in words ("prefill 4 × TP1 on H200 + decode 1 × TP4 on H100 (8 GPUs:
4 H200 + 4 H100)"); the planner's key stays as a tooltip and in the folded rerun command."""

import os

from report_common import (BadInput, esc, fidelity_words, fmt, fmt_int, kv_table, num, page,
                           read_json_file, table)
from report_plan_charts import pareto_cost, pareto_tokens, rate_charts
from report_plan_words import (LATENCIES, Namer, Trust, cost_per_hour, dict_of, dicts,
                               economics_lines, energy_text, folded_command, folded_table, gpus_of,
                               ident, int_of, margin_text, metrics_of, plan_model, question,
                               read_jsonl, slo_bound, slo_words, th, violation_words)


def answer_box(plan, rows, namer, trust, model, bounds, att, target_rate):
    """The lead: the answer (the ranking's first row), why, its margins, the cautions, the
    runner-up (its second row)."""
    out = ['<div class="answer">']
    if not rows:
        return []
    best = rows[0]
    runner = rows[1] if len(rows) > 1 else None
    m = metrics_of(best)
    target = dict_of(plan.get("target"))
    if target_rate is not None:
        out.append("<h2>Answer: %s</h2>" % namer.cell(best, model))
        met = num(target.get("met"))
        cost = cost_per_hour(best)
        out.append("<p>The fewest GPUs meeting the SLO at <b>%s req/s</b>: <b>%s GPUs</b>"
                   "%s%s%s.</p>" % (
            fmt(target_rate, "g"), fmt_int(gpus_of(best)),
            (", $%s per hour" % fmt(cost, ".2f")) if cost is not None else "",
            energy_text(best),
            (" &mdash; the fewest of the %s configurations that meet it" % fmt_int(met))
            if met is not None and met > 1 else ""))
        if m:
            out.append("<p>Margin at %s req/s: %s.</p>" % (fmt(target_rate, "g"),
                                                          margin_text(m, bounds, att)))
    else:
        out.append("<h2>Recommended: %s</h2>" % namer.cell(best, model))
        out.append("<p>It won on goodput per GPU: <b>%s req/s per GPU</b> (it meets the SLO up to "
                   "%s req/s on %s GPUs)%s%s.</p>" % (
                       fmt(best.get("goodput_per_gpu"), ".3f"),
                       fmt(best.get("max_rate_rps"), ".3g"),
                       fmt_int(gpus_of(best)),
                       (", $%s per million output tokens" %
                        fmt(best.get("cost_per_million_tokens"), ".3f"))
                       if num(best.get("cost_per_million_tokens")) is not None else "",
                       energy_text(best)))
        if m:
            low = num(best.get("lowest_failing_rate_rps"))
            out.append("<p>Margin at %s req/s: %s%s.</p>" % (
                fmt(best.get("max_rate_rps"), ".3g"), margin_text(m, bounds, att),
                ("; the lowest rate that failed: %s req/s" % fmt(low, ".3g"))
                if low is not None else ""))
    out += trust.cautions("The answer", best, bounds)
    if target_rate is not None:
        low = target.get("lowest_cost")
        if isinstance(low, dict) and low.get("key") != best.get("key"):
            out.append("<p>Cheapest per hour: %s ($%s per hour).</p>" % (
                namer.cell(low), fmt(low.get("cost_per_hour"), ".2f")))
        mini = dict_of(target.get("one_replica_fewer"))
        if mini.get("checked") and "pruned" in mini:
            out.append("<p>Minimal: one replica fewer is pruned (%s).</p>" % esc(mini["pruned"]))
        elif mini.get("checked"):
            fewer = one_fewer(namer.config_of(best))
            name = esc(mini.get("key", "?"))
            if fewer is not None and num(mini.get("gpus")) == sum(namer.gpu_counts(fewer).values()):
                name = '<span title="%s">%s</span>' % (esc(mini.get("key", "")),
                                                       esc(namer._words(fewer, None, False)))
            out.append("<p>%s: with one replica fewer (%s) %s.</p>" % (
                "Minimal" if not mini.get("meets_slo") else "<b>Not minimal</b>", name,
                "it fails the SLO: " + "; ".join(violation_words(mini, bounds, att))
                if not mini.get("meets_slo") else "it meets the SLO too"))
        elif mini.get("reason"):
            out.append("<p>Minimal: %s.</p>" % esc(mini["reason"]))
    else:
        cheapest = plan.get("cheapest")
        if isinstance(cheapest, str) and cheapest != best.get("key"):
            for r in rows:
                if r.get("key") == cheapest:
                    out.append("<p>Cheapest per million output tokens: %s ($%s).</p>" % (
                        namer.cell(r), fmt(r.get("cost_per_million_tokens"), ".3f")))
    if runner is not None:
        if target_rate is not None:
            rc = cost_per_hour(runner)
            out.append("<p>Runner-up: %s%s.%s</p>" % (
                namer.cell(runner), (", $%s per hour" % fmt(rc, ".2f")) if rc is not None else "",
                (" Margin: %s." % margin_text(metrics_of(runner), bounds, att))
                if metrics_of(runner) else ""))
        else:
            out.append("<p>Runner-up: %s, %s req/s per GPU (%s req/s on %s GPUs).%s</p>" % (
                namer.cell(runner), fmt(runner.get("goodput_per_gpu"), ".3f"),
                fmt(runner.get("max_rate_rps"), ".3g"), fmt_int(gpus_of(runner)),
                (" Margin: %s." % margin_text(metrics_of(runner), bounds, att))
                if metrics_of(runner) else ""))
        out += trust.cautions("The runner-up", runner, bounds)
    out.append("</div>")
    return out


def one_fewer(cfg):
    """The configuration the minimality check simulates: one replica fewer (with pools of
    their own shape: one decode replica fewer)."""
    if not isinstance(cfg, dict):
        return None
    c = dict(cfg)
    c["replicas"] = int_of(cfg, "replicas") - 1
    if isinstance(cfg.get("decode"), dict) and cfg.get("disaggregation") is True:
        c["decode"] = dict(cfg["decode"], replicas=int_of(cfg["decode"], "replicas") - 1)
    c.pop("gpus", None)
    return c


def ranking_order(plan, ranked, target_rate):
    """The rows of the one ranking, the answer first, and the sentence saying the order."""
    target = dict_of(plan.get("target"))
    if target_rate is None:
        return ranked, ("Order: the highest goodput per GPU (requests per second meeting the SLO "
                        "at the highest rate that meets it, per GPU), then the lower cost per "
                        "million output tokens, then the configuration's key &mdash; the "
                        "planner's ranking. Row 1 is the recommendation.")

    def order(r):
        c = cost_per_hour(r)
        g = gpus_of(r)
        gp = num(r.get("goodput_per_gpu"))
        if gp is None and g:
            gp = (metrics_of(r).get("goodput_rps") or 0) / g
        return (g if g is not None else float("inf"), round(c, 6) if c is not None else 1e300,
                -(gp or 0), ident(r))
    rows = sorted(ranked, key=order)
    best = target.get("fewest_gpus")
    if isinstance(best, dict) and best.get("key"):
        first = [r for r in rows if r.get("key") == best["key"]]
        if not first:  # not in the ranked list: the answer's own entry leads
            first = [dict(best, goodput_per_gpu=(metrics_of(best).get("goodput_rps") or 0) /
                          (gpus_of(best) or 1), max_rate_rps=target_rate)]
        rows = first + [r for r in rows if r.get("key") != best["key"]]
    return rows, ("Order: the fewest GPUs meeting the SLO at %s req/s, then the lower cost per "
                  "hour, then the higher goodput per GPU, then the configuration's key &mdash; "
                  "how the planner picks the answer (plan.json's own ranked list is by goodput "
                  "per GPU). Row 1 is the answer." % fmt(target_rate, "g"))


def ranking_table(rows, namer, trust, bounds, target_rate):
    headers = ["rank", "configuration", "GPUs"]
    if target_rate is not None:
        headers += [th("$ per hour", "cost_per_hour"),
                    th("goodput per GPU at %s req/s" % fmt(target_rate, "g"), "goodput_per_gpu"),
                    "tightest latency margin"]
    else:
        headers += [th("highest rate meeting the SLO (req/s)", "max_rate_rps"),
                    th("goodput per GPU (req/s)", "goodput_per_gpu")]
    headers += [th("$ per million output tokens", "cost_per_million_tokens"),
                th("kWh per million output tokens", "energy_kwh_per_million_tokens"),
                "model error (median, max)", "rerun"]
    out = []
    for k, r in enumerate(rows):
        row = [str(k + 1), namer.cell(r), fmt_int(gpus_of(r))]
        if target_rate is not None:
            m = metrics_of(r)
            margins = [(1 - m[k2 + "_p99_s"] / bounds[k2], label) for k2, label in LATENCIES
                       if bounds[k2] and m.get(k2 + "_p99_s") is not None]
            tight = min(margins) if margins else None
            row += [fmt(cost_per_hour(r), ".2f"), fmt(r.get("goodput_per_gpu"), ".3f"),
                    ("%s %.0f%% under" % (tight[1], tight[0] * 100)) if tight else "&ndash;"]
        else:
            row += [fmt(r.get("max_rate_rps"), ".3g"), fmt(r.get("goodput_per_gpu"), ".3f")]
        row += [fmt(r.get("cost_per_million_tokens"), ".3f"),
                fmt(r.get("energy_kwh_per_million_tokens"), ".3f"),
                trust.error_text(r), folded_command(r)]
        out.append(row)
    return folded_table(headers, out, "ranked", "ranked configurations")


def failures_section(failed, namer, bounds, att, closest_only):
    """The configurations that missed the SLO: the bound(s) violated and by how much."""
    rates = {num(f.get("rate_rps", f.get("max_rate_tried_rps"))) for f in failed}
    one_rate = len(rates) == 1 and None not in rates
    rows = []
    for k, f in enumerate(failed):
        row = [str(k + 1), namer.cell(f)]
        if not one_rate:
            row.append(fmt(f.get("rate_rps", f.get("max_rate_tried_rps")), ".3g"))
        row.append("; ".join(violation_words(f, bounds, att)))
        rows.append(row)
    headers = ["#", "configuration"] + ([] if one_rate else ["at (req/s)"]) + ["what failed"]
    out = ["<h2>%s</h2>" % ("The closest candidates (none meets the SLO)" if closest_only
                            else "Failed the SLO")]
    out.append("<p>%d configuration%s missed the SLO%s, closest first:</p>" % (
        len(failed), "" if len(failed) == 1 else "s",
        (" at %s req/s" % fmt(list(rates)[0], "g")) if one_rate else ""))
    out.append(folded_table(headers, rows, "failed", "that failed"))
    return out


def pruned_section(pruned, namer):
    """Pruned configurations grouped by reason, with counts; each group's configurations
    folded."""
    groups = {}
    for p in pruned:
        groups.setdefault((str(p.get("kind", "")), str(p.get("reason", "") or "no reason given")),
                          []).append(p)
    order = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    rows = []
    for (kind, reason), ps in order:
        names = sorted(namer.words(p) for p in ps)
        rows.append(['%d &times;' % len(ps),
                     esc(reason) + (' <span class="muted">(%s)</span>' % esc(kind) if kind else ""),
                     "<details><summary>the %d configuration%s</summary><ul>%s</ul></details>" % (
                         len(ps), "" if len(ps) == 1 else "s",
                         "".join("<li>%s</li>" % esc(n) for n in names))])
    html = table(["count", "reason", "configurations"], rows, "pruned")
    html = html.replace("<tr><td>", '<tr><td class="count">')
    return ["<h2>Pruned (not simulated)</h2>",
            "<p>%d configuration%s not simulated, for %d reason%s:</p>" % (
                len(pruned), " was" if len(pruned) == 1 else "s were", len(order),
                "" if len(order) == 1 else "s"), html]


def closest_from_results(results):
    """Without failed_slo: each simulated configuration's best probe, closest first."""
    best = {}
    for r in results:
        a = metrics_of(r).get("attainment")
        if a is not None and (ident(r) not in best or a > best[ident(r)][0]):
            best[ident(r)] = (a, r)
    return [v[1] for v in sorted(best.values(), key=lambda v: (-v[0], ident(v[1])))]


def render_plan(plt, d):
    plan = read_json_file(os.path.join(d, "plan.json"), "a plan's result")
    if not isinstance(plan, dict):
        raise BadInput("%s: expected a JSON object" % os.path.join(d, "plan.json"))
    results = read_jsonl(os.path.join(d, "results.jsonl"))
    name = plan.get("name", "(unnamed)")
    slo = dict_of(plan.get("slo"))
    ranked = dicts(plan.get("ranked"))
    pruned = dicts(plan.get("pruned"))
    failed = dicts(plan.get("failed_slo"))
    fidelity = dict_of(plan.get("fidelity"))
    target = dict_of(plan.get("target"))
    target_rate = num(target.get("rate_rps"))
    bounds = {k: slo_bound(slo, k) for k, _ in LATENCIES}
    att = slo_bound(slo, "attainment", "target", "percentile")
    if att is not None and att > 1:
        att /= 100.0
    if att is None and any(bounds.values()):
        att = 0.99  # the planner's default (docs/plan.md)
    namer = Namer(plan, results)
    trust = Trust(fidelity, namer)
    model = plan_model(plan, d, pruned)
    rows, order_sentence = ranking_order(plan, ranked, target_rate)
    rank_of = {ident(r): k + 1 for k, r in enumerate(rows)}

    body = ["<h1>prima plan: %s</h1>" % esc(name),
            question(plan, model, namer, bounds, att, target_rate)]
    body.extend(answer_box(plan, rows, namer, trust, model, bounds, att, target_rate))
    for gpu in sorted(fidelity):
        words = fidelity_words(fidelity[gpu])
        if words:
            body.append(words.replace(">", "><b>%s:</b> " % esc(gpu), 1))
    body.append('<div class="tables">' + kv_table([
        ("SLO", slo_words(bounds, att)),
        ("target rate", (fmt(target_rate, "g") + " req/s") if target_rate is not None else "none"),
        ("configurations", fmt_int(plan.get("configurations"))),
        ("simulated", fmt_int(plan.get("searched"))),
        ("simulations", fmt_int(plan.get("simulations"))),
        ("wall time", fmt(plan.get("wall_seconds"), ".1f", suffix=" s")),
        ("meet the SLO", fmt_int(len(ranked))),
        ("failed the SLO", fmt_int(len(failed))),
        ("pruned", fmt_int(len(pruned))),
    ]) + "</div>")

    closest_only = False
    if rows:
        body.append("<h2>Ranked configurations</h2>")
        body.append('<p class="order">%s</p>' % order_sentence)
        body.append(ranking_table(rows, namer, trust, bounds, target_rate))
        body.extend(economics_lines(plan))
    else:
        closest_only = True
        if not failed and results:
            failed = closest_from_results(results)
        body.append('<div class="warn"><b>No configuration meets the SLO%s.</b> %s</div>' % (
            (" at %s req/s" % fmt(target_rate, "g")) if target_rate is not None else "",
            "The closest candidates are listed below, with what they missed."
            if failed else "No candidate was simulated."))
        if failed:
            body.extend(failures_section(failed, namer, bounds, att, True))

    body.extend(rate_charts(plt, results, rows, namer, bounds, att, rank_of))
    body.extend(pareto_tokens(plt, plan, results, namer, rank_of))
    body.extend(pareto_cost(plt, rows, namer))
    if failed and not closest_only:
        body.extend(failures_section(failed, namer, bounds, att, False))
    if pruned:
        body.extend(pruned_section(pruned, namer))
    return page("prima plan: %s" % name, body)
