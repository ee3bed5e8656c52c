#!/usr/bin/env python3
"""Self-contained HTML reports for prima.

    python3 reports/render.py simulate DIR   # DIR/report.json, requests.csv, timeline.csv
    python3 reports/render.py plan DIR       # DIR/plan.json (and DIR/results.jsonl)
    python3 reports/render.py compare BEFORE AFTER OUT.html   # two simulate runs

writes DIR/report.html (or OUT.html): one file, charts as inline SVG (matplotlib, Agg backend), no
network and no other file needed to view it. Inputs are read defensively: a missing key or
file skips its table or chart, never crashes. Output is deterministic for the same inputs.

Exit codes: 0 ok, 2 bad input (missing directory or main file, malformed JSON),
3 matplotlib missing. `prima report DIR` and `prima simulate --html` run this script
(embedded in the binary). Only the standard library and matplotlib are used.
"""

import os
import sys

from report_common import BadInput, EXIT_BAD_INPUT, die, load_matplotlib
from report_compare import render_compare
from report_plan import render_plan
from report_simulate import render_simulate


def main(argv):
    if len(argv) == 5 and argv[1] == "compare":
        dirs, path = argv[2:4], argv[4]
    elif len(argv) == 3 and argv[1] in ("simulate", "plan"):
        dirs, path = argv[2:3], os.path.join(argv[2], "report.html")
    else:
        die("usage: render.py simulate|plan DIR | render.py compare BEFORE AFTER OUT.html",
            EXIT_BAD_INPUT)
    kind = argv[1]
    for d in dirs:
        if not os.path.isdir(d):
            die("%s: no such directory" % d, EXIT_BAD_INPUT)
    plt = load_matplotlib()
    try:
        if kind == "compare":
            out = render_compare(plt, *dirs)
        elif kind == "simulate":
            out = render_simulate(plt, dirs[0])
        else:
            out = render_plan(plt, dirs[0])
    except BadInput as e:
        die(str(e), EXIT_BAD_INPUT)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(out)
        os.replace(tmp, path)
    except OSError as e:
        die("%s: cannot write: %s" % (path, e), 1)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
