#!/usr/bin/python3
"""Per-op medians over the runs of a clgraph trace, steadier than one run's figures.

    clgraph run MODEL --repeats 40 --trace F --trace-runs 41
    /usr/bin/python3 tools/trace_op_medians.py F [--skip N] [--top N] [--json OUT]

Each "step" span of the trace is one run; an op's duration in a run is its "op" span inside
that step. Skips the first N runs (default 5: a process's first runs are slower), prints the
median step, the sum of the ops' medians and the ops with the largest medians (name, shape),
and with --json writes {op name: median us} for comparing two builds.

F may also be ONNX Runtime's profile (tools/ort_run.js --profile F): each "model_run" span is a
run and each node's "*_kernel_time" span its op (shown with its op type), so that the same
command sets ONNX Runtime's per-node medians beside clgraph's."""
import argparse, json, statistics, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json")
    a = ap.parse_args()
    with open(a.trace) as f:
        events = json.load(f)
    ort = isinstance(events, list)  # ONNX Runtime's profile: a bare list of events
    if ort:
        steps = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
        ops = []
        for e in events:
            if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
                args = e.get("args", {})
                ops.append(dict(e, name=e["name"][:-len("_kernel_time")],
                                args={"shape": args.get("op_name")}))
    else:
        events = events["traceEvents"]
        steps = [e for e in events if e.get("cat") == "step" and e.get("ph") == "X"]
        ops = [e for e in events if e.get("cat") == "op"]
    steps = sorted(steps, key=lambda e: e["ts"])[a.skip:]
    if not steps:
        sys.exit(f"{a.trace}: no runs left after skipping {a.skip} "
                 f"({'ort_run.js --runs N' if ort else 'clgraph run --trace-runs N'})")
    ops.sort(key=lambda e: e["ts"])
    per_op, shape = {}, {}
    i = 0
    for s in steps:  # both sorted by start: each op falls in at most one step
        end = s["ts"] + s["dur"]
        while i < len(ops) and ops[i]["ts"] < s["ts"]:
            i += 1
        while i < len(ops) and ops[i]["ts"] <= end:
            e = ops[i]
            per_op.setdefault(e["name"], []).append(e["dur"])
            shape.setdefault(e["name"], e.get("args", {}).get("shape"))
            i += 1
    med = {k: statistics.median(v) for k, v in per_op.items()}
    print(f"runs {len(steps)}  median step {statistics.median(s['dur'] for s in steps):.0f} us"
          f"  sum of op medians {sum(med.values()):.0f} us")
    for k, v in sorted(med.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{v:9.0f}  {shape[k]}  {k}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(med, f, indent=1)


if __name__ == "__main__":
    main()
