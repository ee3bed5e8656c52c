#!/usr/bin/env python3
"""Static checks of the container images' files (deploy/docker/), no image built:

- each Dockerfile starts from ARG BASE (so a local base image can replace Docker Hub's) and
  every FROM is ${BASE};
- the final stage has ssh and sshd (multi-pod replicas' ranks start over ssh) and a user whose
  shell runs commands;
- the final stage runs as uid 10001, enters through /usr/local/bin/prima-entrypoint, exposes
  8000, has a HEALTHCHECK on /v2/health/ready and the model at /models/model.gguf;
- every COPY source exists and is not left out of the context by .dockerignore;
- the build stage copies every top-level source directory CMakeLists.txt compiles from (a new
  one must be added to the Dockerfiles);
- .dockerignore keeps .git, build*/, models/ and out/ out of the context;
- hadolint, where it is installed (warnings and errors; DL3008, unpinned apt versions, is accepted:
  Debian 12's versions move with its point releases).

usage: dockerfile_test.py REPO_ROOT. Prints 'N passed, N failed'; exit 1 on a failure.
"""
import fnmatch
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
DOCKERFILES = ["deploy/docker/Dockerfile", "deploy/docker/Dockerfile.cuda"]
failures = []
passed = 0


def check(name, ok, detail=""):
    global passed
    if ok:
        passed += 1
        print(f"ok: {name}")
    else:
        failures.append(name)
        print(f"FAIL: {name}: {detail}")


def instructions(path):
    """(keyword, arguments) per instruction, continuation lines joined, comments dropped."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if cur and s.lstrip().startswith("#"):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            kw, _, rest = cur.strip().partition(" ")
            out.append((kw.upper(), rest.strip()))
            cur = ""
    return out


def ignore_patterns():
    with open(os.path.join(ROOT, ".dockerignore")) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def ignored(rel, patterns):
    parts = rel.split("/")
    for p in patterns:
        p = p.rstrip("/")
        for i in range(1, len(parts) + 1):
            if fnmatch.fnmatch("/".join(parts[:i]), p):
                return True
    return False


def cmake_source_dirs():
    dirs = set()
    for cm in ["CMakeLists.txt", "kernels/cuda/CMakeLists.txt"]:
        with open(os.path.join(ROOT, cm)) as f:
            text = f.read()
        dirs |= set(re.findall(r"\$\{CMAKE_SOURCE_DIR\}/([A-Za-z0-9_.-]+)", text))
        dirs |= {d.split("/")[0] for d in re.findall(r"add_subdirectory\(([A-Za-z0-9_/.-]+)", text)}
    # tests/ and bench/ are not built in the images (PRIMA_BUILD_TESTS/BENCH=OFF).
    return {d for d in dirs if d not in ("tests", "bench")}


patterns = ignore_patterns()
for needed in [".git", "build*/", "models/", "out/"]:
    check(f".dockerignore leaves out {needed}", needed in patterns, f"patterns: {patterns}")

for rel in DOCKERFILES:
    ins = instructions(os.path.join(ROOT, rel))
    check(f"{rel}: starts with ARG BASE", ins and ins[0][0] == "ARG" and ins[0][1].startswith("BASE="),
          f"first instruction: {ins[:1]}")
    froms = [a for k, a in ins if k == "FROM"]
    check(f"{rel}: every FROM is ${{BASE}}", froms and all(f.split()[0] == "${BASE}" for f in froms),
          f"FROM lines: {froms}")
    check(f"{rel}: two stages", len(froms) == 2, f"FROM lines: {froms}")
    last = max(i for i, (k, _) in enumerate(ins) if k == "FROM")
    final = ins[last:]
    users = [a for k, a in final if k == "USER"]
    check(f"{rel}: final stage runs as uid 10001", users and users[-1].split(":")[0] == "10001",
          f"USER: {users}")
    runs = " ".join(a for k, a in final if k == "RUN")
    check(f"{rel}: ssh and sshd for multi-pod replicas (deploy/helm/prima/files/launch.sh)",
          "openssh-client" in runs and "openssh-server" in runs, "final stage RUN lines")
    check(f"{rel}: the user's shell runs commands (mpirun starts ranks over ssh)",
          re.search(r"useradd [^&]*--shell /bin/(ba)?sh ", runs) is not None, "useradd --shell")
    entry = [a for k, a in final if k == "ENTRYPOINT"]
    check(f"{rel}: entry point prima-entrypoint",
          entry == ['["/usr/local/bin/prima-entrypoint"]'], f"ENTRYPOINT: {entry}")
    health = [a for k, a in final if k == "HEALTHCHECK"]
    check(f"{rel}: HEALTHCHECK on /v2/health/ready",
          len(health) == 1 and "/v2/health/ready" in health[0], f"HEALTHCHECK: {health}")
    envs = " ".join(a for k, a in final if k == "ENV")
    check(f"{rel}: model at /models/model.gguf, port 8000",
          "PRIMA_MODEL_PATH=/models/model.gguf" in envs and "PRIMA_PORT=8000" in envs
          and ("EXPOSE", "8000") in final, f"ENV: {envs}")
    copies = [a.split() for k, a in ins if k == "COPY"]
    bad = []
    for args in copies:
        if any(a.startswith("--from=") for a in args):
            continue
        srcs = [a for a in args if not a.startswith("--")][:-1]
        for s in srcs:
            if not os.path.exists(os.path.join(ROOT, s)) or ignored(s.rstrip("/"), patterns):
                bad.append(s)
    check(f"{rel}: COPY sources exist in the context", not bad, f"missing or ignored: {bad}")
    build_stage = ins[:last]
    copied = {a.split()[-2].rstrip("/").split("/")[0] for k, a in build_stage
              if k == "COPY" and not a.startswith("--from")}
    missing = sorted(cmake_source_dirs() - copied)
    check(f"{rel}: the build stage copies every source directory", not missing,
          f"CMakeLists.txt compiles from {missing}, not copied")

hadolint = shutil.which("hadolint")
if hadolint:
    for rel in DOCKERFILES:
        r = subprocess.run([hadolint, "--failure-threshold", "warning", "--ignore", "DL3008",
                            os.path.join(ROOT, rel)], capture_output=True, text=True)
        check(f"{rel}: hadolint (warnings)", r.returncode == 0, r.stdout + r.stderr)
else:
    print("note: hadolint is not installed; its check is left out")

print(f"{passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
