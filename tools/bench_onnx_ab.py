#!/usr/bin/python3
"""A/B latency on CPU:0, alternated in one script run: several clgraph binaries (a build of main
and a branch, each optionally under CLGRAPH_HOST_GEMM_ISA=ISA) against ONNX Runtime, on the
models tools/compare_onnx.py exported into OUT_DIR (NAME_bB.onnx, NAME_bB.input.npy).

    /usr/bin/python3 tools/bench_onnx_ab.py OUT_DIR ROUNDS RUNS MODELS BATCHES name=BIN[:ISA] ...

Each round runs every engine once (the order rotating), each one subprocess of `clgraph run
--repeats RUNS --json` (CLGRAPH_HOST_THREADS=2) or of tools/ort_run.js (--threads 2; ORT_DIR,
default build/ort, as compare_onnx.py's --ort-dir), taking its median_ms. Prints per engine the
median over the rounds, ORT/engine of those medians and the median of the rounds' ratios
(above 1: that engine is faster than ONNX Runtime), and the rounds' figures."""
import json, os, statistics, subprocess, sys
out, rounds, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
models, batches = sys.argv[4].split(","), sys.argv[5].split(",")
engines = []
for spec in sys.argv[6:]:
    name, rest = spec.split("=", 1)
    binary, _, isa = rest.partition(":")
    engines.append((name, binary, isa))
ort_dir = os.environ.get("ORT_DIR", "build/ort")
here = os.path.dirname(os.path.abspath(__file__))
def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)["median_ms"]
    raise SystemExit(f"{cmd}: {p.returncode} {p.stderr[-500:]}")
for m in models:
    for b in batches:
        model = f"{out}/{m}_b{b}.onnx"; inp = f"{out}/{m}_b{b}.input.npy"
        allnames = [e[0] for e in engines] + ["ort"]
        res = {n: [] for n in allnames}
        for r in range(rounds):
            order = allnames[r % len(allnames):] + allnames[:r % len(allnames)]
            for n in order:
                if n == "ort":
                    env = dict(os.environ, NODE_PATH=f"{ort_dir}/node_modules")
                    cmd = ["node", f"{here}/ort_run.js", model, "--input", f"input={inp}",
                           "--runs", str(runs), "--threads", "2"]
                else:
                    _, binary, isa = next(e for e in engines if e[0] == n)
                    env = dict(os.environ, CLGRAPH_HOST_THREADS="2")
                    if isa:
                        env["CLGRAPH_HOST_GEMM_ISA"] = isa
                    cmd = [binary, "run", model, "--input", f"input={inp}", "--json",
                           "--repeats", str(runs)]
                res[n].append(run(cmd, env))
        med = {n: statistics.median(v) for n, v in res.items()}
        line = f"{m:14s} b{b}: " + "  ".join(f"{n} {med[n]:7.1f}ms" for n in allnames)
        line += "  | ORT/x: " + "  ".join(
            f"{n} {med['ort']/med[n]:.2f}x (pairs {statistics.median([o/c for o, c in zip(res['ort'], res[n])]):.2f}x)"
            for n in allnames if n != "ort")
        print(line, flush=True)
        print("   rounds:", json.dumps(res), flush=True)
