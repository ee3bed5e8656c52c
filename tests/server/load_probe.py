#!/usr/bin/env python3
"""Load probe for `prima serve` (asyncio, raw HTTP/1.1 keep-alive connections; not a test).

  load_probe.py rps     --port P [--conns 64] [--seconds 5]   non-streaming small completions/s
  load_probe.py streams --port P [--clients 1000] [--tokens 200]  concurrent SSE streams held
  load_probe.py ttft    --port P [--n 200]                    client TTFT - simulated TTFT

Prints one JSON line with what it measured. The client runs in one Python process, so on a
small machine the client itself may be the limit of `rps`: it says so by reporting its CPU
time next to the wall time.
"""
import argparse
import asyncio
import json
import resource
import statistics
import time
import urllib.request


def model_of(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models") as r:
        return json.load(r)["data"][0]["id"]


def request_bytes(body):
    data = json.dumps(body).encode()
    return (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    body = await reader.readexactly(n)
    return status, body


async def rps(port, conns, seconds):
    m = model_of(port)
    req = request_bytes({"model": m, "prompt": "hi", "max_tokens": 1})
    done, errors = 0, 0
    stop = time.perf_counter() + seconds

    async def worker():
        nonlocal done, errors
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.perf_counter() < stop:
            writer.write(req)
            status, _ = await read_response(reader)
            if status == 200:
                done += 1
            else:
                errors += 1
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(conns)])
    wall = time.perf_counter() - t0
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    return {"mode": "rps", "connections": conns, "requests": done, "errors": errors,
            "wall_s": round(wall, 3), "requests_per_s": round(done / wall, 1),
            "client_cpu_s": round(cpu.ru_utime + cpu.ru_stime, 2)}


async def streams(port, clients, tokens):
    m = model_of(port)
    req = request_bytes({"model": m, "prompt": "hi", "max_tokens": tokens, "stream": True})
    ok, errors, token_events = 0, 0, 0
    opened = asyncio.Event()
    started = 0

    async def client():
        nonlocal ok, errors, token_events, started
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            if b" 200 " not in head.split(b"\r\n")[0]:
                errors += 1
                return
            started += 1
            if started == clients:
                opened.set()
            n, buf = 0, b""
            while b"data: [DONE]" not in buf:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                buf = buf[-64:] + chunk
                n += chunk.count(b'"text":" ')
            token_events += n
            if b"data: [DONE]" in buf:
                ok += 1
            else:
                errors += 1
            writer.close()
        except Exception:
            errors += 1

    t0 = time.perf_counter()
    await asyncio.gather(*[client() for _ in range(clients)])
    return {"mode": "streams", "clients": clients, "completed": ok, "errors": errors,
            "all_open_at_once": opened.is_set(), "token_events": token_events,
            "wall_s": round(time.perf_counter() - t0, 3)}


async def ttft(port, n):
    m = model_of(port)
    diffs = []
    for i in range(n):
        req = request_bytes({"model": m, "prompt": "y" * (16 + 8 * (i % 50)), "max_tokens": 2,
                             "stream": True})
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        t0 = time.perf_counter()
        writer.write(req)
        buf = b""
        while b'"text":" the"' not in buf:
            buf += await reader.read(65536)
        first = time.perf_counter() - t0
        while b"data: [DONE]" not in buf:
            buf += await reader.read(65536)
        writer.close()
        line = next(l for l in buf.split(b"\n") if b'"prima"' in l)
        sim = json.loads(line[line.index(b"{"):])["prima"]["ttft_s"]
        diffs.append(first - sim)
    diffs.sort()
    q = lambda p: diffs[min(len(diffs) - 1, int(p * len(diffs)))] * 1e3
    return {"mode": "ttft", "n": n, "overhead_ms_p50": round(q(0.5), 3),
            "overhead_ms_p99": round(q(0.99), 3), "overhead_ms_max": round(diffs[-1] * 1e3, 3),
            "overhead_ms_min": round(diffs[0] * 1e3, 3),
            "overhead_ms_mean": round(statistics.mean(diffs) * 1e3, 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["rps", "streams", "ttft"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--n", type=int, default=200)
    a = ap.parse_args()
    if a.mode == "rps":
        out = asyncio.run(rps(a.port, a.conns, a.seconds))
    elif a.mode == "streams":
        out = asyncio.run(streams(a.port, a.clients, a.tokens))
    else:
        out = asyncio.run(ttft(a.port, a.n))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
