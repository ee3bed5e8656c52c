#!/usr/bin/env python3
"""Observability assets of the deployment against what `prima serve` exports.

deploy/helm/prima/files/prima.rules.yml (Prometheus rules) and prima-dashboard.json (Grafana)
may only query metric names that `prima serve` exports, names the rules file records, or the
few external names listed in EXTERNAL (each with its source). This test:

  * starts `prima serve --backend sim` and `prima serve --backend real` (SmolLM2), sends
    requests of each priority class so the histograms have samples, and scrapes /metrics and
    /prima/metrics of each;
  * extracts the metric names and label names of every rule expression and every dashboard
    query (targets and template variables) with a PromQL lexer, and checks each name against
    the union of both backends' scrapes (label names against the series' labels, plus the
    target labels Prometheus and the operator add);
  * runs `promtool check rules` on the rules, `promtool test rules` on
    tests/deploy/prima.rules.test.yml (the alerts fire on synthetic series and stay quiet on
    healthy ones), and `promtool check rules` on the dashboard's queries (their syntax);
  * starts a Prometheus server (Debian's `prometheus`) that scrapes both prima servers and
    evaluates the rules, and checks that every rule evaluates without error and that every
    dashboard query runs, the ones on prima's metrics returning data;
  * checks the dashboard's structure (datasource variable, variables defined, unique ids) and
    the alerts' labels and annotations (severity, runbook anchors that exist in
    docs/observability.md);
  * checks that docs/observability.md's metric table is the one the scrapes give
    (`observability_test.py PRIMA MODEL --table` prints it);
  * unit-tests the extractor, wrong names included.

usage: observability_test.py PATH/TO/prima [MODEL.gguf] [--table]
       (exit 0: pass, 77: skipped in part (no promtool/prometheus, or no model file), 1: failures)
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RULES = os.path.join(ROOT, "deploy/helm/prima/files/prima.rules.yml")
DASHBOARD = os.path.join(ROOT, "deploy/helm/prima/files/prima-dashboard.json")
RULES_TEST = os.path.join(HERE, "prima.rules.test.yml")
DOC = os.path.join(ROOT, "docs/observability.md")

PRIMA = None
MODEL = None
SKIPPED = []  # why parts were skipped (exit 77 when all else passed)

# Names that are not prima's, with where they come from, and the labels their series carry
# (besides the target labels). The rules may use only those marked rules=True.
EXTERNAL = {
    "up": dict(source="Prometheus itself: 1/0 for each scrape target's last scrape",
               labels=set(), rules=True),
    "DCGM_FI_DEV_GPU_UTIL": dict(source="NVIDIA dcgm-exporter (GPU utilization, percent)",
                                 labels={"gpu", "UUID", "device", "modelName", "Hostname",
                                         "DCGM_FI_DRIVER_VERSION"}, rules=False),
}
for _n in ("port_data_transmitted_bytes_total", "port_data_received_bytes_total",
           "port_errors_received_total", "port_discards_transmitted_total", "link_downed_total",
           "port_transmit_wait_total"):
    EXTERNAL["node_infiniband_" + _n] = dict(
        source="Prometheus node_exporter, infiniband collector (/sys/class/infiniband)",
        labels={"device", "port"}, rules=False)

# Labels of every scraped series that the scrape itself does not show: Prometheus adds job and
# instance; the Prometheus operator's ServiceMonitor adds namespace, service, pod, container,
# endpoint.
TARGET_LABELS = {"job", "instance", "namespace", "service", "pod", "container", "endpoint"}

# ---------------------------------------------------------------------------------------------
# PromQL lexer and name extraction

FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
    "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
    "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
    "delta", "deriv", "double_exponential_smoothing", "end", "exp", "floor", "histogram_avg",
    "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
    "histogram_stdvar", "histogram_sum", "holt_winters", "hour", "idelta", "increase", "info",
    "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
    "mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi",
    "predict_linear", "present_over_time", "quantile_over_time", "rad", "rate", "resets",
    "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc",
    "sort_desc", "sqrt", "start", "stddev_over_time", "stdvar_over_time", "sum_over_time",
    "tan", "tanh", "time", "timestamp", "vector", "year",
}
AGGREGATORS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
               "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2"}
MATCH_OPS = {"=", "!=", "=~", "!~"}
GRAFANA_BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h",
                    "__range_s": "3600", "__range_ms": "3600000", "__interval_ms": "15000"}

TOKEN_RE = re.compile(r"""
   (?P<ws>\s+)
 | (?P<comment>\#[^\n]*)
 | (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
 | (?P<var>\$\{[A-Za-z0-9_]+(?::[A-Za-z0-9_]+)?\}|\$[A-Za-z_][A-Za-z0-9_]*)
 | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![A-Za-z0-9_]))
 | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
 | (?P<ident>[A-Za-z_][A-Za-z0-9_:]*)
 | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^=<>,(){}\[\]:@])
""", re.X)
VAR_RE = re.compile(r"\$\{([A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class PromQLError(ValueError):
    pass


def tokenize(expr):
    toks, pos = [], 0
    while pos < len(expr):
        m = TOKEN_RE.match(expr, pos)
        if not m:
            raise PromQLError(f"cannot read {expr[pos:pos + 20]!r} in {expr!r}")
        pos = m.end()
        if m.lastgroup not in ("ws", "comment"):
            toks.append((m.lastgroup, m.group()))
    return toks


class Names:
    """What one expression uses."""

    def __init__(self):
        self.metrics = set()          # metric names
        self.selector_labels = set()  # (metric or None, label) of label matchers
        self.group_labels = set()     # labels of by/without/on/ignoring/group_left/group_right
        self.functions = set()
        self.unknown_functions = set()
        self.variables = set()        # Grafana variables ($name, ${name})


def analyze(expr):
    """The metric names, label names, functions and Grafana variables of a PromQL expression."""
    n = Names()
    toks = tokenize(expr)
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else (None, None)
        if kind == "var":
            n.variables.add(VAR_RE.fullmatch(text).group(1) or VAR_RE.fullmatch(text).group(2))
        elif kind == "string":
            for m in VAR_RE.finditer(text):
                n.variables.add(m.group(1) or m.group(2))
        elif kind == "op" and text == "{":
            prev = toks[i - 1] if i > 0 else (None, None)
            metric = prev[1] if prev[0] == "ident" and prev[1] in n.metrics else None
            j = i + 1
            labels = []
            while j < len(toks) and toks[j] != ("op", "}"):
                k, t = toks[j]
                if k == "ident" and j + 1 < len(toks) and toks[j + 1][1] in MATCH_OPS:
                    labels.append(t)
                    if t == "__name__" and toks[j + 1][1] == "=" and j + 2 < len(toks) \
                            and toks[j + 2][0] == "string":
                        metric = toks[j + 2][1][1:-1]
                        n.metrics.add(metric)
                elif k == "string":
                    for m in VAR_RE.finditer(t):
                        n.variables.add(m.group(1) or m.group(2))
                elif k not in ("op",):
                    raise PromQLError(f"unexpected {t!r} in a selector of {expr!r}")
                j += 1
            if j == len(toks):
                raise PromQLError(f"unclosed {{ in {expr!r}")
            # (A selector without a metric name before it takes its __name__ matcher's.)
            n.selector_labels.update((metric, label) for label in labels)
            i = j
        elif kind == "ident":
            low = text.lower()
            if low in GROUPING:
                if nxt == ("op", "("):
                    j = i + 2
                    while j < len(toks) and toks[j] != ("op", ")"):
                        if toks[j][0] == "ident":
                            n.group_labels.add(toks[j][1])
                        elif toks[j] != ("op", ","):
                            raise PromQLError(f"unexpected {toks[j][1]!r} in {text}(...) "
                                              f"of {expr!r}")
                        j += 1
                    i = j
            elif low in KEYWORDS:
                pass
            elif nxt == ("op", "("):
                (n.functions if text in FUNCTIONS or low in AGGREGATORS
                 else n.unknown_functions).add(text)
            elif low in AGGREGATORS and nxt[0] == "ident" and nxt[1].lower() in ("by", "without"):
                n.functions.add(text)
            elif low in ("inf", "nan"):
                pass
            else:
                n.metrics.add(text)
        i += 1
    return n


def grafana_query_expr(q):
    """The PromQL expression and the label of a Grafana variable query (label_values(...))."""
    m = re.fullmatch(r"\s*label_values\(\s*(.*?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", q, re.S)
    if m:
        return m.group(1), m.group(2)
    m = re.fullmatch(r"\s*query_result\(\s*(.*)\)\s*", q, re.S)
    if m:
        return m.group(1), None
    m = re.fullmatch(r"\s*label_values\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", q)
    if m:
        return None, m.group(1)
    raise PromQLError(f"unknown Grafana query {q!r}")


def substitute(expr, values):
    """expr with Grafana variables replaced: builtins by durations, others by `values`."""
    def rep(m):
        name = m.group(1) or m.group(2)
        if name in GRAFANA_BUILTINS:
            return GRAFANA_BUILTINS[name]
        return values[name]
    return VAR_RE.sub(rep, expr)


# ---------------------------------------------------------------------------------------------
# The rules file and the dashboard

def load_rules(path=RULES, text=None):
    import yaml
    doc = yaml.safe_load(text if text is not None else open(path).read())
    rules = []
    for g in doc["groups"]:
        for r in g["rules"]:
            rules.append(dict(r, group=g["name"]))
    return rules


def recorded_labels(rules):
    """{recorded name: the labels it keeps (its expression's by-labels and its labels:)}."""
    out = {}
    for r in rules:
        if "record" in r:
            out[r["record"]] = analyze(r["expr"]).group_labels | set(r.get("labels", {}))
    return out


def walk_panels(panels):
    for p in panels:
        yield p
        yield from walk_panels(p.get("panels", []))


def dashboard_queries(dash):
    """[(where, PromQL expression)] of every panel target and every query variable; and
    [(where, label)] of the variables' label_values labels."""
    exprs, labels = [], []
    for p in walk_panels(dash["panels"]):
        for t in p.get("targets", []):
            exprs.append((f"panel {p['id']} {p.get('title')!r} target {t['refId']}", t["expr"]))
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            e, label = grafana_query_expr(q)
            if e:
                exprs.append((f"variable {v['name']}", e))
            if label:
                labels.append((f"variable {v['name']}", label, e))
    return exprs, labels


def variable_values(dash):
    """Values to put in for each variable when a query runs outside Grafana."""
    out = {}
    for v in dash["templating"]["list"]:
        if v["type"] in ("textbox", "constant", "custom"):
            out[v["name"]] = str(v["query"]).split(",")[0].strip()
        elif v["type"] == "datasource":
            out[v["name"]] = "prometheus"
        else:
            out[v["name"]] = ".*"
    return out


# ---------------------------------------------------------------------------------------------
# Scrapes

def parse_scrape(text):
    """{sample name: set of label names}, {family: (type, help)}."""
    samples, families, helps = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            families[name] = typ
        elif line.startswith("# HELP "):
            _, _, name, h = line.split(" ", 3)
            helps[name] = h.replace("\\\\", "\\").replace("\\n", " ")
        elif line and not line.startswith("#"):
            m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+\S+", line)
            if not m:
                raise ValueError(f"bad sample line {line!r}")
            labels = set(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"', m.group(2) or ""))
            samples.setdefault(m.group(1), set()).update(labels)
    return samples, {f: (t, helps.get(f, "")) for f, t in families.items()}


def family_of(sample, families):
    if sample in families:
        return sample
    for suffix in ("_bucket", "_sum", "_count"):
        if sample.endswith(suffix) and families.get(sample[:-len(suffix)], ("",))[0] in (
                "histogram", "summary"):
            return sample[:-len(suffix)]
    return None


def terminate(proc, timeout):
    """SIGTERM, then SIGKILL after `timeout` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Server:
    """A `prima serve` subprocess on a free port."""

    def __init__(self, *args, start_timeout=60, launcher=()):
        # launcher: e.g. mpirun ... (the job then runs in its own session, ended as a whole).
        self.launched = bool(launcher)
        self.dir = tempfile.TemporaryDirectory()
        port_file = os.path.join(self.dir.name, "port")
        self.log = open(os.path.join(self.dir.name, "log"), "w+")
        env = dict(os.environ)
        env.pop("PRIMA_API_KEY", None)
        self.proc = subprocess.Popen([*launcher, PRIMA, "serve", "--port", "0", "--port-file",
                                      port_file, *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=self.launched)
        deadline = time.time() + start_timeout
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("prima serve did not start:\n" + self.output())
            time.sleep(0.02)
        self.port = int(open(port_file).read())
        while True:
            try:
                self.request("GET", "/health")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.02)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def request(self, method, path, body=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def model(self):
        return json.loads(self.request("GET", "/v1/models")[1])["data"][0]["id"]

    def stop(self):
        if self.launched and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # every rank and mpirun at once
            self.proc.wait()
        terminate(self.proc, 30)
        self.log.close()
        self.dir.cleanup()


def drive(srv, per_priority, max_tokens):
    """Completions of each priority class (and one for an unknown model: a rejection)."""
    model = srv.model()
    for p in ("high", "normal", "low"):
        for _ in range(per_priority):
            st, body = srv.request("POST", "/v1/completions",
                                   {"model": model, "prompt": "The cluster serves",
                                    "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
                                    "priority": p})
            if st != 200:
                raise AssertionError(f"completion ({p}) answered {st}: {body[:300]!r}")
    st, _ = srv.request("POST", "/v1/completions", {"model": "no-such-model", "prompt": "x"})
    if st != 404:
        raise AssertionError(f"unknown model answered {st}, not 404")


SERVERS = {}   # backend -> Server
SCRAPES = {}   # backend -> {"samples": {...}, "families": {...}, "text": {path: text}}


def scrape(srv):
    out = {"text": {}}
    for path in ("/metrics", "/prima/metrics"):
        st, body = srv.request("GET", path)
        if st != 200:
            raise AssertionError(f"GET {path} answered {st}")
        out["text"][path] = body.decode()
    out["samples"], out["families"] = parse_scrape(out["text"]["/metrics"])
    return out


def start_servers():
    SERVERS["sim"] = Server("--backend", "sim", "--speed", "20")
    if MODEL and os.path.exists(MODEL):
        # Two pipeline stages under mpirun where it is installed, so that rank 0 has links
        # to report (prima:link_bytes_total); one process otherwise.
        if shutil.which("mpirun"):
            SERVERS["real"] = Server("--backend", "real", "--model", MODEL, "--max-model-len",
                                     "512", "--max-num-seqs", "2", "--kernel-threads", "1",
                                     "--pp", "2", start_timeout=120,
                                     launcher=("mpirun", "--allow-run-as-root", "--oversubscribe",
                                               "-np", "2"))
        else:
            SKIPPED.append("no mpirun: the real backend ran as one process (no link metrics)")
            SERVERS["real"] = Server("--backend", "real", "--model", MODEL, "--max-model-len",
                                     "512", "--max-num-seqs", "2", "--kernel-threads", "2")
    else:
        SKIPPED.append(f"no model file {MODEL}: the real backend was not scraped")
    errors = []

    def run(name, srv):
        try:
            drive(srv, *((2, 8) if name == "sim" else (1, 4)))
            SCRAPES[name] = scrape(srv)
        except Exception as e:  # reported below
            errors.append(f"{name}: {e}\n{srv.output()}")
    threads = [threading.Thread(target=run, args=kv) for kv in SERVERS.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("\n".join(errors))


def stop_servers():
    for s in SERVERS.values():
        s.stop()


def exported():
    """{sample name: labels} over every backend scraped (the union)."""
    out = {}
    for s in SCRAPES.values():
        for name, labels in s["samples"].items():
            out.setdefault(name, set()).update(labels)
    return out


def check_names(exprs, known, recorded, external, where_ok_external=True):
    """Problems with the metric and label names of [(where, expr)] (an empty list: none)."""
    problems = []
    all_labels = set(TARGET_LABELS)
    for labels in known.values():
        all_labels |= labels
    for labels in recorded.values():
        all_labels |= labels
    for e in external.values():
        all_labels |= e["labels"]
    for where, expr in exprs:
        try:
            n = analyze(expr)
        except PromQLError as e:
            problems.append(f"{where}: {e}")
            continue
        for f in sorted(n.unknown_functions):
            problems.append(f"{where}: unknown function {f}()")
        for m in sorted(n.metrics):
            if m not in known and m not in recorded and m not in external:
                problems.append(f"{where}: metric {m} is not exported by prima serve "
                                f"(neither backend), not recorded by the rules, not external")
        for m, label in sorted(n.selector_labels, key=str):
            if m in known:
                ok = known[m] | TARGET_LABELS
            elif m in recorded:
                ok = recorded[m]
            elif m in external:
                ok = external[m]["labels"] | TARGET_LABELS
            else:
                ok = all_labels
            if label not in ok and label != "__name__":
                problems.append(f"{where}: label {label} is not a label of {m or 'any series'}")
        for label in sorted(n.group_labels):
            if label not in all_labels and label != "le":
                problems.append(f"{where}: label {label} (in by/on/...) is on no series")
    return problems


# ---------------------------------------------------------------------------------------------
# The metric table of docs/observability.md

TABLE_BEGIN = "<!-- metrics-table:begin (tests/deploy/observability_test.py --table) -->"
TABLE_END = "<!-- metrics-table:end -->"


def metrics_table():
    fams = {}
    for backend, s in SCRAPES.items():
        for f, (typ, h) in s["families"].items():
            e = fams.setdefault(f, dict(type=typ, help=h, labels=set(), backends=[]))
            e["backends"].append(backend)
        for sample, labels in s["samples"].items():
            f = family_of(sample, s["families"])
            fams[f]["labels"] |= labels - {"le"}
    lines = ["| name | type | labels | backends | help (from the scrape) |",
             "|---|---|---|---|---|"]
    for f in sorted(fams, key=lambda f: (not f.startswith("prima:"), f)):
        e = fams[f]
        lines.append(f"| `{f}` | {e['type']} | {', '.join(sorted(e['labels']))} | "
                     f"{', '.join(sorted(e['backends'], key=['sim', 'real'].index))} | "
                     f"{e['help'].replace('|', '/')} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Prometheus

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Prometheus:
    def __init__(self, targets, rules):
        self.dir = tempfile.TemporaryDirectory()
        cfg = os.path.join(self.dir.name, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                    f"rule_files: [{json.dumps(rules)}]\n"
                    "scrape_configs:\n"
                    "  - job_name: prima\n"
                    f"    static_configs: [{{targets: {json.dumps(targets)}}}]\n")
        self.port = free_port()
        self.log = open(os.path.join(self.dir.name, "log"), "w+")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={self.dir.name}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/-/ready")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("prometheus did not start:\n" + self.output())
            time.sleep(0.1)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def get(self, path, **params):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", path + "?" + urllib.parse.urlencode(params, doseq=True))
        r = c.getresponse()
        return json.loads(r.read())

    def query(self, expr):
        return self.get("/api/v1/query", query=expr)

    def stop(self):
        terminate(self.proc, 20)
        self.log.close()
        self.dir.cleanup()


# ---------------------------------------------------------------------------------------------
# Tests

def need(tool):
    if shutil.which(tool) is None:
        msg = f"{tool} not found (Debian's prometheus package: scripts/setup.sh)"
        if msg not in SKIPPED:
            SKIPPED.append(msg)
        raise unittest.SkipTest(msg)


class ExtractorTest(unittest.TestCase):
    """The name extraction itself, wrong names included."""

    KNOWN = {"prima:time_to_first_token_seconds_bucket": {"model", "priority", "le"},
             "prima:time_to_first_token_seconds_count": {"model", "priority"},
             "prima:num_requests_waiting": {"model"}}

    def test_functions_keywords_labels_durations_numbers_are_not_metrics(self):
        n = analyze('histogram_quantile(0.99, sum by (le, priority) (rate('
                    'prima:time_to_first_token_seconds_bucket{model=~"m|n", le!="+Inf"}[1h30m:1m] '
                    'offset 5m))) > bool 1e-3 and on (job) group_left (model) up unless Inf')
        self.assertEqual(n.metrics, {"prima:time_to_first_token_seconds_bucket", "up"})
        self.assertEqual(n.functions, {"histogram_quantile", "sum", "rate"})
        self.assertEqual(n.group_labels, {"le", "priority", "job", "model"})
        self.assertEqual(n.selector_labels, {("prima:time_to_first_token_seconds_bucket", "model"),
                                             ("prima:time_to_first_token_seconds_bucket", "le")})
        self.assertEqual(n.unknown_functions, set())

    def test_strings_and_grafana_variables(self):
        n = analyze('sum without (instance) (rate(x_total{job=~"$job", model="prima:not_a_metric"}'
                    '[$__rate_interval])) * $params_b / ${scale}')
        self.assertEqual(n.metrics, {"x_total"})
        self.assertEqual(n.variables, {"job", "__rate_interval", "params_b", "scale"})
        self.assertEqual(substitute('rate(x{a=~"$job"}[$__rate_interval]) * ${k}',
                                    {"job": ".*", "k": "2"}), 'rate(x{a=~".*"}[1m]) * 2')

    def test_name_label_and_aggregation_forms(self):
        n = analyze('count({__name__="vllm:num_requests_running", model_name!=""}) + '
                    'topk(3, avg_over_time(a:b:c[5m])) + sum(x) by (y) + group by (z) (w)')
        self.assertEqual(n.metrics, {"vllm:num_requests_running", "a:b:c", "x", "w"})
        self.assertIn(("vllm:num_requests_running", "model_name"), n.selector_labels)
        self.assertEqual(n.group_labels, {"y", "z"})

    def test_wrong_names_are_caught(self):
        exprs = [
            ("typo", "rate(prima:time_to_first_token_second_bucket[5m])"),
            ("histogram family without a suffix", "rate(prima:time_to_first_token_seconds[5m])"),
            ("label typo", 'prima:num_requests_waiting{modle="m"}'),
            ("grouping typo", "sum by (prioirty) (prima:time_to_first_token_seconds_count)"),
            ("function typo", "ratee(prima:time_to_first_token_seconds_count[5m])"),
            ("fine", 'sum by (priority, job) (rate(prima:time_to_first_token_seconds_bucket'
                     '{le="2.5", instance="a"}[5m]))'),
        ]
        problems = check_names(exprs, self.KNOWN, {}, {})
        self.assertEqual(len(problems), 5, problems)
        for where, _ in exprs[:-1]:
            self.assertTrue(any(p.startswith(where + ":") for p in problems), (where, problems))
        self.assertIn("prima:time_to_first_token_second_bucket", problems[0])
        self.assertIn("modle", problems[2])
        self.assertIn("prioirty", problems[3])
        self.assertIn("ratee", problems[4])

    def test_recorded_and_external_names(self):
        rules = [{"record": "r:x:rate5m", "expr": "sum by (job, model) (rate(a_total[5m]))"}]
        rec = recorded_labels(rules)
        self.assertEqual(rec, {"r:x:rate5m": {"job", "model"}})
        ext = {"ext_metric": dict(source="s", labels={"gpu"}, rules=False)}
        self.assertEqual(check_names([("ok", 'r:x:rate5m{model="m"} * on () ext_metric{gpu="0"}')],
                                     {}, rec, ext), [])
        self.assertEqual(len(check_names([("bad", 'r:x:rate5m{priority="high"}')], {}, rec, ext)), 1)

    def test_unreadable_expressions_are_reported(self):
        self.assertEqual(len(check_names([("x", 'up{job="a"')], {}, {}, {"up": EXTERNAL["up"]})), 1)
        self.assertRaises(PromQLError, analyze, "rate(x[5m]) ; y")

    def test_grafana_variable_queries(self):
        self.assertEqual(grafana_query_expr('label_values(m{job=~"$job"}, model)'),
                         ('m{job=~"$job"}', "model"))
        self.assertEqual(grafana_query_expr("label_values(job)"), (None, "job"))
        self.assertEqual(grafana_query_expr("query_result(sum(x))"), ("sum(x)", None))


class ScrapeTest(unittest.TestCase):
    def test_both_paths_serve_the_same_families(self):
        for backend, s in SCRAPES.items():
            a = parse_scrape(s["text"]["/metrics"])[1]
            b = parse_scrape(s["text"]["/prima/metrics"])[1]
            self.assertEqual(a, b, backend)

    def test_histograms_have_samples_of_each_priority(self):
        for backend, s in SCRAPES.items():
            text = s["text"]["/metrics"]
            for p in ("high", "normal", "low"):
                for fam in ("prima:time_to_first_token_seconds", "prima:inter_token_latency_seconds"):
                    m = re.search(rf'^{re.escape(fam)}_count\{{[^}}]*priority="{p}"[^}}]*\}} (\S+)$',
                                  text, re.M)
                    self.assertIsNotNone(m, (backend, fam, p))
                    self.assertGreater(float(m.group(1)), 0, (backend, fam, p))

    def test_the_rules_threshold_buckets_are_exported(self):
        for backend, s in SCRAPES.items():
            text = s["text"]["/metrics"]
            self.assertRegex(text, r'prima:time_to_first_token_seconds_bucket\{[^}]*le="2\.5"')
            self.assertRegex(text, r'prima:inter_token_latency_seconds_bucket\{[^}]*le="0\.1"')


class RulesTest(unittest.TestCase):
    def test_every_name_is_exported(self):
        rules = load_rules()
        rec = recorded_labels(rules)
        ext = {k: v for k, v in EXTERNAL.items() if v["rules"]}
        exprs = [(f"rule {r.get('record') or r.get('alert')}", r["expr"]) for r in rules]
        self.assertEqual(check_names(exprs, exported(), rec, ext), [])
        used = set().union(*(analyze(e).metrics for _, e in exprs))
        self.assertTrue({"prima:time_to_first_token_seconds_bucket",
                         "prima:inter_token_latency_seconds_bucket", "prima:num_requests_waiting",
                         "prima:kv_cache_usage_perc", "up"} <= used, used)

    def test_a_wrong_name_in_the_rules_file_is_caught(self):
        text = open(RULES).read().replace("prima:kv_cache_usage_perc", "prima:kv_cache_usage_pct", 1)
        rules = load_rules(text=text)
        exprs = [(f"rule {r.get('record') or r.get('alert')}", r["expr"]) for r in rules]
        problems = check_names(exprs, exported(), recorded_labels(rules),
                               {k: v for k, v in EXTERNAL.items() if v["rules"]})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("prima:kv_cache_usage_pct", problems[0])

    def test_alerts_have_severity_for_and_annotations(self):
        doc = open(DOC).read()
        anchors = {re.sub(r"[^a-z0-9 _-]", "", h.strip().lower()).replace(" ", "-")
                   for h in re.findall(r"^#+ (.*)$", doc, re.M)}
        alerts = [r for r in load_rules() if "alert" in r]
        self.assertGreaterEqual(len(alerts), 8)
        for a in alerts:
            self.assertIn(a["labels"]["severity"], ("critical", "warning"), a["alert"])
            self.assertIn("for", a, a["alert"])
            for k in ("summary", "description", "runbook_url"):
                self.assertTrue(a["annotations"].get(k), (a["alert"], k))
            url = a["annotations"]["runbook_url"]
            self.assertTrue(url.startswith("docs/observability.md#"), url)
            self.assertIn(url.split("#", 1)[1], anchors, f"{a['alert']}: no heading for {url}")
        names = {a["alert"] for a in alerts}
        for want in ("PrimaTTFTBudgetBurnFast", "PrimaTPOTBudgetBurnFast", "PrimaQueueGrowing",
                     "PrimaKVCacheNearFull", "PrimaReplicaDown"):
            self.assertIn(want, names)

    def test_promtool_check_rules(self):
        need("promtool")
        out = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("SUCCESS", out.stdout + out.stderr)

    def test_promtool_test_rules(self):
        need("promtool")
        out = subprocess.run(["promtool", "test", "rules", RULES_TEST], capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


class DashboardTest(unittest.TestCase):
    def setUp(self):
        self.dash = json.load(open(DASHBOARD))

    def test_structure(self):
        d = self.dash
        self.assertGreaterEqual(d["schemaVersion"], 36)
        self.assertTrue(d["uid"] and d["title"])
        ds = [v for v in d["templating"]["list"] if v["type"] == "datasource"]
        self.assertEqual([(v["name"], v["query"]) for v in ds], [("datasource", "prometheus")])
        panels = list(walk_panels(d["panels"]))
        ids = [p["id"] for p in panels]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        for p in panels:
            self.assertIn("gridPos", p, p["title"])
            for t in p.get("targets", []):
                self.assertEqual(t["datasource"], {"type": "prometheus", "uid": "${datasource}"},
                                 p["title"])
            if p["type"] not in ("row", "text"):
                self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
                self.assertTrue(p.get("targets"), p["title"])

    def test_panels_cover_the_issue(self):
        exprs = " ".join(e for _, e in dashboard_queries(self.dash)[0])
        titles = " ".join(p.get("title", "") for p in walk_panels(self.dash["panels"]))
        for want in ("prima:time_to_first_token_seconds_bucket",
                     "prima:inter_token_latency_seconds_bucket", "prima:generation_tokens_total",
                     "prima:kv_cache_usage_perc", "prima:num_requests_waiting",
                     "prima:gpu_utilization_perc", "DCGM_FI_DEV_GPU_UTIL",
                     "node_infiniband_port_data_transmitted_bytes_total"):
            self.assertIn(want, exprs)
        self.assertIn("by (le, priority)", exprs)
        for want in ("TFLOP/s", "KV cache", "Queue", "InfiniBand"):
            self.assertIn(want, titles)

    def test_every_variable_is_defined(self):
        defined = {v["name"] for v in self.dash["templating"]["list"]}
        exprs, _ = dashboard_queries(self.dash)
        for where, e in exprs:
            for v in analyze(e).variables:
                self.assertTrue(v in defined or v in GRAFANA_BUILTINS, f"{where}: ${v}")

    def test_every_name_is_exported(self):
        exprs, labels = dashboard_queries(self.dash)
        known = exported()
        rec = recorded_labels(load_rules())
        self.assertEqual(check_names(exprs, known, rec, EXTERNAL), [])
        all_labels = set(TARGET_LABELS).union(*known.values(), *(e["labels"] for e in EXTERNAL.values()))
        for where, label, _ in labels:
            self.assertIn(label, all_labels, where)
        # The external names it uses are the ones listed (none unlisted, none listed in vain).
        used = set().union(*(analyze(e).metrics for _, e in exprs))
        self.assertEqual({m for m in used if m not in known and m not in rec}, set(EXTERNAL))

    def test_a_wrong_name_in_the_dashboard_is_caught(self):
        text = open(DASHBOARD).read().replace("prima:num_preemptions_total", "prima:num_preemption_total")
        exprs, _ = dashboard_queries(json.loads(text))
        problems = check_names(exprs, exported(), recorded_labels(load_rules()), EXTERNAL)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("prima:num_preemption_total", problems[0])

    def test_promtool_parses_every_query(self):
        need("promtool")
        exprs, _ = dashboard_queries(self.dash)
        values = variable_values(self.dash)
        import yaml
        doc = {"groups": [{"name": "dashboard", "rules": [
            {"record": f"dashboard:q{i}", "expr": substitute(e, values)}
            for i, (_, e) in enumerate(exprs)]}]}
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            yaml.safe_dump(doc, f)
            f.flush()
            out = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True,
                                 text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


class LivePrometheusTest(unittest.TestCase):
    """A Prometheus server scrapes both prima servers and evaluates the rules."""

    @classmethod
    def setUpClass(cls):
        need("prometheus")
        cls.prom = Prometheus([f"127.0.0.1:{s.port}" for s in SERVERS.values()], RULES)
        # A few scrapes with requests in between (rates need two samples that differ).
        for _ in range(3):
            time.sleep(1.2)
            for name, srv in SERVERS.items():
                drive(srv, 1, 4)
        # Until the rules have recorded from two scrapes or more, every class of every server
        # in each ratio the dashboard and the tests read (at most 30 s: a loaded machine
        # evaluates late).
        deadline = time.time() + 30
        recorded = ("prima_slo:tpot_error_ratio:rate5m", "prima_slo:ttft_error_ratio:rate5m",
                    "prima_slo:ttft_error_ratio:rate1h")
        while any(len(cls.prom.query(r)["data"]["result"]) < 3 * len(SERVERS) for r in recorded) \
                and time.time() < deadline:
            time.sleep(0.5)

    @classmethod
    def tearDownClass(cls):
        cls.prom.stop()

    def test_targets_up(self):
        r = self.prom.query("up")
        self.assertEqual(r["status"], "success")
        self.assertEqual(sorted(float(s["value"][1]) for s in r["data"]["result"]),
                         [1.0] * len(SERVERS), r)

    def test_every_rule_evaluates(self):
        deadline = time.time() + 10
        while True:  # until every rule has been evaluated once
            groups = self.prom.get("/api/v1/rules")["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            if all(r.get("health") != "unknown" for r in rules) or time.time() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(len(rules), len(load_rules()))
        bad = [(r["name"], r.get("health"), r.get("lastError")) for r in rules
               if r.get("health") != "ok"]
        self.assertEqual(bad, [])
        # The recorded TTFT error ratios exist for every priority class.
        r = self.prom.query("prima_slo:ttft_error_ratio:rate5m")["data"]["result"]
        self.assertEqual({s["metric"]["priority"] for s in r}, {"high", "normal", "low"}, r)

    def test_every_dashboard_query_runs(self):
        dash = json.load(open(DASHBOARD))
        exprs, labels = dashboard_queries(dash)
        values = variable_values(dash)
        empty = []
        for where, e in exprs:
            q = substitute(e, values)
            r = self.prom.query(q)
            self.assertEqual(r.get("status"), "success", (where, q, r))
            uses_prima = any(m.startswith("prima") for m in analyze(e).metrics)
            # (A filter such as `> 0` or `== 0` may leave nothing: nothing refused, none down.)
            if uses_prima and not r["data"]["result"] and not re.search(r"(>|==) 0\b", e):
                empty.append((where, q))
        self.assertEqual(empty, [])
        for where, label, e in labels:
            if e and any(m.startswith("prima") for m in analyze(e).metrics):
                r = self.prom.get(f"/api/v1/label/{label}/values", **{"match[]": substitute(e, values)})
                self.assertTrue(r["data"], (where, label))


class DocTest(unittest.TestCase):
    def test_metric_table_is_the_scraped_one(self):
        if set(SCRAPES) != {"sim", "real"}:
            self.skipTest("needs both backends' scrapes")
        doc = open(DOC).read()
        self.assertIn(TABLE_BEGIN, doc)
        got = doc.split(TABLE_BEGIN, 1)[1].split(TABLE_END, 1)[0].strip()
        self.assertEqual(got, metrics_table(),
                         "docs/observability.md's metric table is stale: regenerate it with "
                         "observability_test.py PRIMA MODEL --table")


def main():
    global PRIMA, MODEL
    args = [a for a in sys.argv[1:] if a != "--table"]
    if not args:
        print(__doc__)
        return 2
    PRIMA = args[0]
    MODEL = args[1] if len(args) > 1 else os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("skipped: python3 yaml module missing (Debian: python3-yaml)")
        return SKIP
    t0 = time.time()
    start_servers()
    try:
        if "--table" in sys.argv:
            print(metrics_table())
            return 0
        suite = unittest.TestSuite()
        loader = unittest.defaultTestLoader
        for case in (ExtractorTest, ScrapeTest, RulesTest, DashboardTest, LivePrometheusTest,
                     DocTest):
            suite.addTests(loader.loadTestsFromTestCase(case))
        result = unittest.TextTestRunner(verbosity=2).run(suite)
    finally:
        stop_servers()
    print(f"observability_test: {time.time() - t0:.1f} s; backends scraped: {sorted(SCRAPES)}")
    if not result.wasSuccessful():
        return 1
    if SKIPPED:
        print("skipped in part: " + "; ".join(SKIPPED))
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
