#!/usr/bin/env python3
"""The real backend's TP and PP across hosts, and the failure of one host.

Hosts are network namespaces on this machine (ip netns + veth on a bridge, Debian's iproute2),
each with its own address; mpirun starts the ranks in them through an rsh agent that runs
`ip netns exec HOST`. The ranks talk UCX over TCP only (UCX_TLS=tcp: no shared memory, which
would cross namespaces), so every byte between ranks crosses a veth link.

Checks:
  - `prima generate --pp 2` on two hosts and `--tp 3` on three give the token ids of one
    process;
  - `prima serve --backend real --pp 2` on two hosts answers a greedy completion with the same
    text as one process; then host 2's link is cut: the next request fails within
    --comm-timeout (+ slack) with an error naming the rank that stopped answering, the server
    logs that the replica was taken out of routing, fails what is in progress and ends the
    job (exit 1 under mpirun: MPI_Abort), so the launcher can restart it;
  - `prima serve --backend real --replicas 2 --pp 2` over three hosts (replica 0 on host 1,
    replica 1 split over hosts 2 and 3): both replicas serve the same text as one process;
    then host 3's link is cut: the requests that replica 1 holds fail there within its
    --comm-timeout, the engine takes replica 1 out of routing and re-routes them to replica 0,
    so every request still succeeds with the same text; /health says which replica was lost
    and why (naming the rank), readiness stays 200 and the job serves on.

Usage: multihost_test.py PRIMA MODEL. Exit 77 (skipped) without root, ip netns, mpirun or the
model file.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
import urllib.error
import urllib.request

PRIMA = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else ""
MODEL = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else ""
PROMPT = "The capital of France is"
COMM_TIMEOUT = 3.0


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class Hosts:
    """N network namespaces on a bridge: host i (1-based) has address PREFIX.(10+i)."""

    def __init__(self, n):
        tag = os.getpid() % 100000
        self.n = n
        self.bridge = f"pmb{tag}"
        self.names = [f"pm{tag}h{i}" for i in range(1, n + 1)]
        self.prefix = f"10.{100 + tag % 100}.{(tag // 100) % 250}"
        self.addrs = [f"{self.prefix}.{10 + i}" for i in range(1, n + 1)]
        self.dir = tempfile.mkdtemp(prefix="prima-hosts-")

    def up(self):
        run(["ip", "link", "add", self.bridge, "type", "bridge"])
        run(["ip", "addr", "add", f"{self.prefix}.1/24", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])
        for i, (ns, addr) in enumerate(zip(self.names, self.addrs)):
            veth = f"{self.bridge}v{i}"
            run(["ip", "netns", "add", ns])
            run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
            run(["ip", "link", "set", veth, "master", self.bridge, "up"])
            run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        # mpirun's rsh agent: "AGENT [options] HOST COMMAND..." -> the command in HOST's netns.
        self.agent = os.path.join(self.dir, "netns-rsh")
        cases = "\n".join(f"  {a}) ns={n} ;;" for a, n in zip(self.addrs, self.names))
        with open(self.agent, "w") as f:
            f.write("#!/bin/sh\n"
                    "while [ $# -gt 0 ] && [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
                    "host=$1; shift\n"
                    f"case $host in\n{cases}\n  *) echo \"netns-rsh: unknown host $host\" >&2;"
                    " exit 1 ;;\nesac\n"
                    # Each host has its own /tmp for Open MPI's session directories.
                    f"mkdir -p {self.dir}/$ns\n"
                    f"exec ip netns exec $ns env OMPI_MCA_orte_tmpdir_base={self.dir}/$ns"
                    " /bin/sh -c \"$*\"\n")
        os.chmod(self.agent, 0o755)

    def down(self):
        for ns in self.names:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                  text=True).stdout.split()
            for p in pids:
                subprocess.run(["kill", "-9", p], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for i in range(self.n):
            subprocess.run(["ip", "link", "del", f"{self.bridge}v{i}"], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def cut(self, i, down=True):
        """Host i (1-based) loses its link (down) or gets it back: its processes live on."""
        run(["ip", "-n", self.names[i - 1], "link", "set", "eth0", "down" if down else "up"])

    def mpirun(self, hosts, args):
        """mpirun of `args` with one rank on each of `hosts` (1-based indices), from the root
        namespace."""
        net = f"{self.prefix}.0/24"
        # The daemons share this machine (and its hostname) with other mpirun jobs: each host
        # gets its own session directory from the rsh agent (a shared one under /tmp was
        # removed by another job's clean-up now and then), and rtc ^hwloc (hwloc's
        # shared-memory topology, one writer per node, segfaulted an orted now and then;
        # Open MPI 4.1.4).
        return ["mpirun", "--allow-run-as-root", "--mca", "plm_rsh_agent", self.agent,
                "--mca", "rtc", "^hwloc", "--bind-to", "none",
                "--mca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net,
                "-x", "UCX_TLS=tcp,self", "-x", "UCX_NET_DEVICES=eth0",
                "--host", ",".join(self.addrs[h - 1] for h in hosts), "-np", str(len(hosts)),
                *args]

    def curl(self, i, url, body=None, timeout=60):
        """(HTTP status, JSON) of a request made from host i."""
        cmd = ["ip", "netns", "exec", self.names[i - 1], "curl", "-s", "-m", str(timeout),
               "-w", "\n%{http_code}", url]
        if body is not None:
            cmd += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        out = subprocess.run(cmd, capture_output=True, text=True).stdout
        text, _, code = out.rpartition("\n")
        try:
            return int(code), json.loads(text) if text else None
        except ValueError:
            return int(code or 0), text


def skip_reason():
    if not PRIMA or not os.path.exists(PRIMA):
        return "usage: multihost_test.py PRIMA MODEL"
    if not MODEL or not os.path.exists(MODEL):
        return f"model file {MODEL} is missing (scripts/fetch-model.sh)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "mpirun", "curl"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    probe = f"pmprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return "cannot create a network namespace: " + r.stderr.strip()
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def generate(prefix, extra):
    cmd = prefix + [PRIMA, "generate", "--model", MODEL, "--prompt", PROMPT, "--ids",
                    "--max-tokens", "8", "--threads", "1", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout.split()


class MultiHost(unittest.TestCase):
    hosts = None

    @classmethod
    def setUpClass(cls):
        cls.hosts = Hosts(3)
        try:
            cls.hosts.up()
        except Exception:
            cls.hosts.down()
            raise
        cls.single = generate([], [])

    @classmethod
    def tearDownClass(cls):
        cls.hosts.down()

    def test_pipeline_over_two_hosts_gives_the_tokens_of_one_process(self):
        self.assertEqual(len(self.single), 8)
        self.assertEqual(generate(self.hosts.mpirun([1, 2], []), ["--pp", "2"]), self.single)

    def test_tensor_parallel_over_three_hosts_gives_the_tokens_of_one_process(self):
        self.assertEqual(generate(self.hosts.mpirun([1, 2, 3], []), ["--tp", "3"]), self.single)

    def test_serving_over_two_hosts_and_the_loss_of_one(self):
        h = self.hosts
        port = 8000 + os.getpid() % 1000
        log = open(os.path.join(h.dir, "serve.log"), "w+")
        cmd = h.mpirun([1, 2], [PRIMA, "serve", "--backend", "real", "--model", MODEL, "--pp",
                                "2", "--host", "0.0.0.0", "--port", str(port), "--kernel-threads",
                                "1", "--comm-timeout", str(COMM_TIMEOUT)])
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://{h.addrs[0]}:{port}"
        try:
            self.wait_ready(proc, base, log)
            body = {"model": os.path.basename(MODEL)[:-5], "prompt": PROMPT, "max_tokens": 8,
                    "temperature": 0}
            code, ans = h.curl(1, base + "/v1/completions", body)
            self.assertEqual(code, 200, ans)
            expected = run([PRIMA, "generate", "--model", MODEL, "--prompt", PROMPT,
                            "--max-tokens", "8", "--threads", "1"]).stdout
            self.assertEqual(ans["choices"][0]["text"], expected[:-1])  # generate adds "\n"
            code, health = h.curl(1, base + "/health")
            self.assertEqual(health["status"], "ok")
            self.assertEqual(health["replicas"]["active"], 1)
            # Rank 0 reports its traffic with rank 1 (the step out, the sampled ids back) and
            # the host's TCP retransmissions.
            metrics = subprocess.run(["ip", "netns", "exec", h.names[0], "curl", "-s",
                                      base + "/prima/metrics"], capture_output=True,
                                     text=True).stdout
            sent = self.sample(metrics, 'prima:link_bytes_total{link="0->1"')
            received = self.sample(metrics, 'prima:link_bytes_total{link="1->0"')
            self.assertGreater(sent, 0, metrics)
            self.assertGreater(received, 0, metrics)
            self.assertIn('prima:link_retransmissions_total{device="host"', metrics)

            h.cut(2)
            t0 = time.time()
            code, ans = h.curl(1, base + "/v1/completions", body, timeout=60)
            waited = time.time() - t0
            self.assertEqual(code, 500, ans)
            message = ans["error"]["message"]
            self.assertIn("rank 1", message)
            self.assertIn(f"timed out after {COMM_TIMEOUT:g} s", message)
            self.assertLess(waited, COMM_TIMEOUT + 10)
            # Rank 0 ends the job (MPI_Abort); its host's process is gone within seconds.
            deadline = time.time() + 30
            while self.rank_alive(1) and time.time() < deadline:
                time.sleep(0.2)
            self.assertFalse(self.rank_alive(1), "rank 0 still running: " + self.read(log))
            text = self.read(log)
            self.assertIn("replica(s) taken out of routing", text)
            self.assertIn("the backend cannot serve again", text)
            self.assertIn("MPI_ABORT was invoked on rank 0", text)
        finally:
            proc.kill()
            proc.wait()
            log.close()
            h.cut(2, down=False)

    def test_two_replicas_in_one_job_and_the_loss_of_one(self):
        h = self.hosts
        port = 9000 + os.getpid() % 1000
        log = open(os.path.join(h.dir, "replicas.log"), "w+")
        # Job ranks 0, 1 (replica 0) on host 1; 2 (replica 1's leader) on host 2, 3 on host 3.
        cmd = h.mpirun([1, 1, 2, 3], [PRIMA, "serve", "--backend", "real", "--model", MODEL,
                                      "--replicas", "2", "--pp", "2", "--host", "0.0.0.0",
                                      "--port", str(port), "--kernel-threads", "1",
                                      "--comm-timeout", str(COMM_TIMEOUT)])
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://{h.addrs[0]}:{port}"
        try:
            self.wait_ready(proc, base, log)
            code, health = h.curl(1, base + "/health")
            self.assertEqual(health["replicas"]["active"], 2, health)
            self.assertEqual(health["replicas"]["unhealthy"], 0, health)
            expected = run([PRIMA, "generate", "--model", MODEL, "--prompt", PROMPT,
                            "--max-tokens", "8", "--threads", "1"]).stdout[:-1]
            body = {"model": os.path.basename(MODEL)[:-5], "prompt": PROMPT, "max_tokens": 8,
                    "temperature": 0}

            def burst(n):
                with ThreadPoolExecutor(n) as pool:
                    return list(pool.map(
                        lambda _: h.curl(1, base + "/v1/completions", body, timeout=90),
                        range(n)))

            for code, ans in burst(4):
                self.assertEqual(code, 200, ans)
                self.assertEqual(ans["choices"][0]["text"], expected)
            # Replica 1 served some of them: rank 0 relayed steps to its leader (job rank 2).
            metrics = subprocess.run(["ip", "netns", "exec", h.names[0], "curl", "-s",
                                      base + "/prima/metrics"], capture_output=True,
                                     text=True).stdout
            self.assertGreater(self.sample(metrics, 'prima:link_bytes_total{link="0->2"'), 0,
                               metrics)
            self.assertGreater(self.sample(metrics, 'prima:link_bytes_total{link="2->0"'), 0,
                               metrics)

            h.cut(3)
            t0 = time.time()
            answers = burst(4)
            waited = time.time() - t0
            for code, ans in answers:
                self.assertEqual(code, 200, ans)
                self.assertEqual(ans["choices"][0]["text"], expected)
            # Replica 1's leader detects the lost rank within its --comm-timeout (one or two
            # of them), the requests are re-prefilled on replica 0.
            self.assertLess(waited, 3 * COMM_TIMEOUT + 15)
            code, health = h.curl(1, base + "/health")
            self.assertEqual(health["status"], "ok", health)
            self.assertEqual(health["replicas"]["active"], 1, health)
            self.assertEqual(health["replicas"]["unhealthy"], 1, health)
            self.assertGreater(health["requests_rerouted"], 0, health)
            error = health["replica_error"]
            self.assertIn("replica 1 (job ranks 2-3", error)
            self.assertIn("rank 1", error)
            self.assertIn(f"timed out after {COMM_TIMEOUT:g} s", error)
            code, _ = h.curl(1, base + "/v2/health/ready")
            self.assertEqual(code, 200)
            # The job serves on with replica 0 alone.
            for code, ans in burst(2):
                self.assertEqual(code, 200, ans)
                self.assertEqual(ans["choices"][0]["text"], expected)
            self.assertIsNone(proc.poll(), "the job ended: " + self.read(log))
            self.assertIn("1 of 2 replica(s) taken out of routing", self.read(log))
        finally:
            proc.terminate()  # rank 0 drains, then ends the job (a replica was lost)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            h.cut(3, down=False)

    def wait_ready(self, proc, base, log):
        """Until the server on host 1 is ready (120 s at most, and while mpirun runs)."""
        deadline = time.time() + 120
        while True:
            code, _ = self.hosts.curl(1, base + "/v2/health/ready", timeout=5)
            if code == 200:
                return
            self.assertIsNone(proc.poll(), "mpirun exited early: " + self.read(log))
            self.assertLess(time.time(), deadline, "not ready in 120 s: " + self.read(log))
            time.sleep(0.5)

    @staticmethod
    def sample(text, prefix):
        for line in text.splitlines():
            if line.startswith(prefix):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no sample {prefix}... in the scrape")

    def rank_alive(self, i):
        pids = subprocess.run(["ip", "netns", "pids", self.hosts.names[i - 1]],
                              capture_output=True, text=True).stdout.split()
        for p in pids:
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    if b"serve" in f.read():
                        return True
            except OSError:
                pass
        return False

    @staticmethod
    def read(log):
        log.flush()
        log.seek(0)
        return log.read()[-3000:]


if __name__ == "__main__":
    why = skip_reason()
    if why:
        print("SKIP:", why)
        sys.exit(77)
    unittest.main(argv=sys.argv[:1], verbosity=2)
