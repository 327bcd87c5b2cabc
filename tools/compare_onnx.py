#!/usr/bin/python3
"""Real architectures exported from PyTorch to ONNX: clgraph against PyTorch and ONNX Runtime.

    /usr/bin/python3 tools/compare_onnx.py --clgraph build/release/clgraph --out /tmp/onnx \\
        --device /device:CPU:0 --device /device:GPU:0 --repeats 5 --runs 10

Needs Debian's python3-torch, python3-torchvision and python3-onnx (run it with
/usr/bin/python3), and ONNX Runtime for Node from tools/get-ort.sh (--ort-dir). Nothing in the
build or the tests needs this script, PyTorch or ONNX Runtime; no CTest test runs it.

For each model (torchvision's resnet18, mobilenet_v2 and squeezenet1_0 with random weights,
and the CIFAR-10 tutorial's model, all from --seed, in eval mode) and each batch (1 and 8):
  1. exports it with torch.onnx.export (--opset, default 13; static shapes, input "input",
     output "output") to OUT/NAME_bB.onnx and writes a random input (standard normal,
     float32, from --seed) to OUT/NAME_bB.input.npy; lists the ONNX op types it uses (and,
     with --json, the distinct values of their attributes). PyTorch's exporter folds each
     BatchNorm into the Conv before it; --keep-batchnorm keeps BatchNormalization nodes. The
     CIFAR-10 model's LRN becomes ONNX's LRN (--lrn-decomposed: PyTorch's own decomposition);
  2. the reference: the same module in float64 (model.double()) on the float64 copy of that
     input; PyTorch float32 and ONNX Runtime (tools/ort_run.js, --threads intra-op threads)
     are judged against it like clgraph, so their differences show what float32 gets;
  3. clgraph: `clgraph run OUT/NAME_bB.onnx --input input=FILE.npy --out-dir DIR --device DEV
     --json` for each --device (default /device:CPU:0; a /device:GPU:N runs on PoCL's CPU
     devices standing in as GPUs: OCL_ICD_VENDORS names PoCL alone, CLGRAPH_DEVICE_TYPES=all,
     as the tests do). A model clgraph cannot import or run is reported with clgraph's
     message and the script goes on;
  4. per output, the worst relative difference against the float64 reference:
     rel = max|a - b| / max|b| (judged against --rtol, default 1e-4: the issue's goal), and
     elem_rel = max over elements of |a - b| / |b| (large where a logit is near zero);
  5. latency on --time-device (default /device:CPU:0), alternated: each of --repeats rounds
     runs clgraph, ONNX Runtime and PyTorch float32 (the order rotating from round to round),
     each as one warm run and then --runs timed runs whose median is the round's figure:
       clgraph: `clgraph run --repeats RUNS --json`, its median_ms: clg_session_run_outputs
         alone (feeds in, outputs copied back to host tensors), after import and session
         creation and one warm run, in a subprocess;
       ONNX Runtime: tools/ort_run.js's median_ms: session.run alone, after the session's
         creation and one warm run, in a node subprocess;
       PyTorch float32: model(x) under torch.inference_mode() in this process, --threads
         threads, after one warm run.
     Reported: each engine's median over the rounds, and the ratios ORT/clgraph and
     PyTorch/clgraph (above 1: clgraph is faster) of those medians and as the median of the
     rounds' ratios.
Exit status: 0 when every clgraph output is within --rtol on every device, 1 otherwise (a
model clgraph cannot run counts as a failure), 2 for a usage or setup error.
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings

# Read by libgomp when torch loads it: without PASSIVE, PyTorch's idle OpenMP threads spin
# while the clgraph and ONNX Runtime subprocesses run, and slow them.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_0", "cifar10"]


class _OnnxLrn(torch.autograd.Function):
    """PyTorch's local_response_norm, exported as ONNX's LRN (the same formula: alpha / size
    times the sum of squares over [c - (size-1)//2, c + size//2]). Without it, PyTorch 1.13
    exports LRN as some twenty nodes (Pad, AveragePool, Pow, and If on the input's rank)."""

    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        return torch.nn.functional.local_response_norm(x, size, alpha, beta, k)

    @staticmethod
    def symbolic(g, x, size, alpha, beta, k):
        return g.op("LRN", x, size_i=size, alpha_f=alpha, beta_f=beta, bias_f=k)


class OnnxLrn(torch.nn.LocalResponseNorm):
    def forward(self, x):
        return _OnnxLrn.apply(x, self.size, self.alpha, self.beta, self.k)


class Cifar10(torch.nn.Module):
    """cifar10.inference of TensorFlow's tutorial (tools/cifar10_model.c) in NCHW: conv 5x5
    SAME 3->64, relu, max pool 3x3/2 SAME, LRN, conv 5x5 SAME 64->64, relu, LRN, max pool,
    fully connected 2304->384->192->10 on the NHWC flatten order (so local3's weights are
    the tutorial's), on 24x24 crops."""

    def __init__(self, lrn_op=True):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(64, 64, 5, padding=2)
        self.local3 = torch.nn.Linear(6 * 6 * 64, 384)
        self.local4 = torch.nn.Linear(384, 192)
        self.softmax_linear = torch.nn.Linear(192, 10)
        # TensorFlow's LRN (depth_radius 4, bias 1, alpha 0.001/9, beta 0.75) is
        # x / (bias + alpha * sum over [c-4, c+4] of x^2)^beta; PyTorch's LocalResponseNorm
        # divides its alpha by size, so it gets size = 2 * 4 + 1 and alpha * size.
        radius, bias, alpha, beta = 4, 1.0, 0.001 / 9.0, 0.75
        size = 2 * radius + 1
        lrn = OnnxLrn if lrn_op else torch.nn.LocalResponseNorm
        self.norm = lrn(size, alpha=alpha * size, beta=beta, k=bias)
        # TensorFlow's 3x3/2 SAME on an even side pads one after (24 -> 12, 12 -> 6): with
        # ceil_mode the last window hangs over the edge by one, which is the same.
        self.pool = torch.nn.MaxPool2d(3, 2, ceil_mode=True)
        for w, sd in ((self.conv1.weight, 5e-2), (self.conv2.weight, 5e-2),
                      (self.local3.weight, 0.04), (self.local4.weight, 0.04),
                      (self.softmax_linear.weight, 1 / 192.0)):
            torch.nn.init.trunc_normal_(w, std=sd, a=-2 * sd, b=2 * sd)
        for b, v in ((self.conv1.bias, 0.0), (self.conv2.bias, 0.1), (self.local3.bias, 0.1),
                     (self.local4.bias, 0.1), (self.softmax_linear.bias, 0.0)):
            torch.nn.init.constant_(b, v)

    def forward(self, x):
        x = self.norm(self.pool(torch.relu(self.conv1(x))))
        x = self.pool(self.norm(torch.relu(self.conv2(x))))
        x = torch.relu(self.local3(x.permute(0, 2, 3, 1).flatten(1)))
        x = torch.relu(self.local4(x))
        return self.softmax_linear(x)


def build(name, seed, lrn_op):
    """The module in eval mode with weights from seed, and its input's shape without batch."""
    torch.manual_seed(seed)
    if name == "cifar10":
        return Cifar10(lrn_op).eval(), (3, 24, 24)
    model = getattr(torchvision.models, name)(weights=None)
    # Fresh BatchNorm layers are identities (mean 0, variance 1, scale 1, shift 0): random
    # statistics and affine parameters make inference-mode BatchNormalization (and its
    # folding into the conv before it) count in the comparison.
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return model.eval(), (3, 224, 224)


def export(model, x, path, opset, keep_batchnorm):
    # PyTorch's exporter warns about constant folding it skips; the op list says what it made.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # In eval mode the exporter folds each BatchNorm into the Conv before it; PRESERVE
        # (the module is in eval mode) keeps them as inference BatchNormalization nodes.
        mode = torch.onnx.TrainingMode.PRESERVE if keep_batchnorm else torch.onnx.TrainingMode.EVAL
        torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"],
                          output_names=["output"], do_constant_folding=True, training=mode)
    m = onnx.load(path)
    ops, attrs = {}, {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
        # The distinct values of each attribute (not tensors): what the importer must cover.
        for at in n.attribute:
            v = onnx.helper.get_attribute_value(at)
            if isinstance(v, (int, float, bytes, list)):
                v = v.decode() if isinstance(v, bytes) else v
                seen = attrs.setdefault(n.op_type, {}).setdefault(at.name, [])
                if v not in seen:
                    seen.append(v)
    opsets = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    return {"op_types": dict(sorted(ops.items())), "attributes": attrs,
            "nodes": len(m.graph.node), "opset_import": opsets,
            "initializers": len(m.graph.initializer)}


def diff(got, ref):
    """rel = max|a - b| / max|b|; elem_rel = max |a - b| / |b| over elements with b != 0."""
    if got.shape != ref.shape:
        return {"error": f"shape {list(got.shape)}, want {list(ref.shape)}"}
    a = got.astype(np.float64)
    d = np.abs(a - ref)
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    nz = ref != 0
    return {
        "rel": float(d.max() / scale) if scale > 0 else float(d.max()),
        "elem_rel": float((d[nz] / np.abs(ref[nz])).max()) if nz.any() else 0.0,
        "max_abs": float(d.max()),
        "finite": bool(np.isfinite(a).all()),
    }


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def json_line(stdout):
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else None


class Runner:
    """The two subprocesses (clgraph and node) with their environments."""

    def __init__(self, a):
        self.a = a
        self.node_env = dict(os.environ, NODE_PATH=os.path.join(a.ort_dir, "node_modules"))
        self.icd_dir = os.path.join(a.out, "pocl-icd")

    def clgraph_env(self, device):
        env = dict(os.environ, CLGRAPH_HOST_THREADS=str(self.a.threads))
        if "GPU" in device.upper():
            # PoCL's CPU devices stand in as GPUs, PoCL alone visible (as the tests do).
            os.makedirs(self.icd_dir, exist_ok=True)
            icd = "/etc/OpenCL/vendors/pocl.icd"
            if os.path.exists(icd):
                shutil.copy(icd, os.path.join(self.icd_dir, "pocl.icd"))
            env.setdefault("OCL_ICD_VENDORS", self.icd_dir)
            env.setdefault("POCL_DEVICES", "pthread")
            env.setdefault("POCL_MEMORY_LIMIT", "2")
            env.setdefault("POCL_CACHE_DIR", os.path.expanduser("~/.cache/clgraph/pocl"))
            env.setdefault("CLGRAPH_DEVICE_TYPES", "all")
        return env

    def clgraph(self, model, inp, device, out_dir=None, repeats=None):
        cmd = [self.a.clgraph, "run", model, "--input", f"input={inp}", "--device", device,
               "--json"]
        if out_dir:
            cmd += ["--out-dir", out_dir]
        if repeats:
            cmd += ["--repeats", str(repeats)]
        return self._run(cmd, self.clgraph_env(device), "clgraph")

    def ort(self, model, inp, out_dir=None, runs=1):
        cmd = ["node", os.path.join(HERE, "ort_run.js"), model, "--input", f"input={inp}",
               "--runs", str(runs), "--threads", str(self.a.threads)]
        if out_dir:
            cmd += ["--out-dir", out_dir]
        return self._run(cmd, self.node_env, "onnxruntime")

    def _run(self, cmd, env, what):
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                               timeout=self.a.timeout)
        except subprocess.TimeoutExpired:
            return None, f"{what}: no result within --timeout {self.a.timeout} s"
        except OSError as e:
            return None, f"{what}: {e}"
        j = json_line(p.stdout) if p.returncode == 0 else None
        if j is None:
            msg = last_line(p.stderr) or last_line(p.stdout) or "no output"
            return None, f"{what} exited with {p.returncode}: {msg}"
        return j, None


def output_file(j, name="output"):
    """The .npy of output `name` ("name:0" is the same tensor), or of the only output."""
    outs = j.get("outputs", [])
    for o in outs:
        base = o["name"][:-2] if o["name"].endswith(":0") else o["name"]
        if base == name and o.get("file"):
            return o["file"]
    return outs[0].get("file") if len(outs) == 1 else None


def accuracy(run, a, path, inp, ref, f32, stem):
    acc = {"torch_float32": {"output": diff(f32, ref)}}
    j, err = run.ort(path, inp, out_dir=stem + ".ort")
    acc["onnxruntime"] = {"error": err} if err else {
        "output": diff(np.load(output_file(j)), ref)}
    acc["clgraph"] = {}
    for dev in a.device:
        tag = dev.strip("/").replace("/", "_").replace(":", "_")
        j, err = run.clgraph(path, inp, dev, out_dir=f"{stem}.clgraph.{tag}")
        if err:
            acc["clgraph"][dev] = {"error": err, "ok": False}
            continue
        f = output_file(j)
        if not f:
            acc["clgraph"][dev] = {"error": "clgraph run wrote no output.npy", "ok": False}
            continue
        d = diff(np.load(f), ref)
        ok = "error" not in d and d["finite"] and d["rel"] <= a.rtol
        acc["clgraph"][dev] = {"output": d, "ok": ok, "nodes_per_device": j.get("devices")}
    return acc


def torch_block(model, x, runs):
    times = []
    with torch.inference_mode():
        for _ in range(runs):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def latency(run, a, model, x, path, inp):
    torch_block(model, x, 1)  # warm: oneDNN primitives, the allocator
    rounds = []
    engines = ["clgraph", "onnxruntime", "torch_float32"]
    errors = {}
    for r in range(a.repeats):
        row = {}
        for k in range(len(engines)):
            e = engines[(r + k) % len(engines)]
            if e in errors:
                continue
            if e == "clgraph":
                j, err = run.clgraph(path, inp, a.time_device, repeats=a.runs)
            elif e == "onnxruntime":
                j, err = run.ort(path, inp, runs=a.runs)
            else:
                j, err = {"median_ms": torch_block(model, x, a.runs)}, None
            if err:
                errors[e] = err
            else:
                row[e] = j["median_ms"]
        rounds.append(row)
    out = {"device": a.time_device, "rounds": rounds, "errors": errors, "median_ms": {},
           "ratio": {}, "ratio_median_of_rounds": {}}
    for e in engines:
        v = [row[e] for row in rounds if e in row]
        if v:
            out["median_ms"][e] = statistics.median(v)
    cg = out["median_ms"].get("clgraph")
    for e in ("onnxruntime", "torch_float32"):
        if cg and e in out["median_ms"]:
            out["ratio"][e] = out["median_ms"][e] / cg
            pairs = [row[e] / row["clgraph"] for row in rounds if e in row and "clgraph" in row]
            out["ratio_median_of_rounds"][e] = statistics.median(pairs)
    return out


def fmt_diff(entry):
    if "error" in entry:
        return entry["error"]
    d = entry["output"]
    if "error" in d:
        return d["error"]
    return f"rel {d['rel']:.2e}  elem_rel {d['elem_rel']:.2e}" + ("" if d["finite"] else
                                                                 "  NOT FINITE")


def print_case(c, a):
    print(f"\n== {c['model']} batch {c['batch']}: {c['onnx']} (opset "
          f"{c['export']['opset_import'].get('ai.onnx')}, {c['export']['nodes']} nodes)")
    print("   op types: " + ", ".join(f"{k} {v}" for k, v in c["export"]["op_types"].items()))
    acc = c["accuracy"]
    print(f"   output vs PyTorch float64 (rel = max|a-b|/max|b|, goal {a.rtol:g}):")
    print(f"     {'PyTorch float32':28s} {fmt_diff(acc['torch_float32'])}")
    print(f"     {'ONNX Runtime':28s} {fmt_diff(acc['onnxruntime'])}")
    for dev, e in acc["clgraph"].items():
        verdict = "" if "error" in e else ("  ok" if e["ok"] else "  OVER")
        # Where its nodes ran: soft placement may have put some elsewhere.
        where = ", ".join(f"{d.split('/device:')[-1]} {n}"
                          for d, n in (e.get("nodes_per_device") or {}).items())
        print(f"     {'clgraph ' + dev:28s} {fmt_diff(e)}{verdict}" +
              (f"  (nodes: {where})" if where else ""))
    lat = c.get("latency")
    if lat:
        m = lat["median_ms"]
        cells = [f"{e} {m[e]:.2f} ms" for e in ("clgraph", "onnxruntime", "torch_float32")
                 if e in m]
        print(f"   latency on {lat['device']} (median of {a.repeats} rounds of {a.runs}-run "
              f"medians): " + ", ".join(cells))
        for e, r in lat["ratio"].items():
            print(f"     {e}/clgraph: {r:.2f}x (median of the rounds' ratios "
                  f"{lat['ratio_median_of_rounds'][e]:.2f}x)")
        for e, err in lat["errors"].items():
            print(f"     {e}: {err}")


def machine():
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = line
                break
    isa = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "neither"
    return {"cpus": os.cpu_count(), "isa": isa, "loadavg": list(os.getloadavg())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clgraph", default="build/release/clgraph", help="the clgraph binary")
    ap.add_argument("--ort-dir", default=os.environ.get("CLGRAPH_ORT_DIR",
                                                        os.path.join(HERE, "..", "build", "ort")),
                    help="the folder tools/get-ort.sh installed into (default build/ort)")
    ap.add_argument("--out", required=True, help="folder for the models, inputs and outputs")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, of " +
                    ", ".join(MODELS))
    ap.add_argument("--batches", default="1,8", help="comma-separated (default 1,8)")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep-batchnorm", action="store_true",
                    help="export BatchNormalization nodes (PyTorch's exporter otherwise folds "
                    "them into the convolutions)")
    ap.add_argument("--lrn-decomposed", action="store_true",
                    help="export the CIFAR-10 model's LRN as PyTorch does by itself (Pad, "
                    "AveragePool, Pow, If, ...) instead of as ONNX's LRN")
    ap.add_argument("--device", action="append",
                    help="a device for clgraph's accuracy runs (repeatable; default "
                    "/device:CPU:0)")
    ap.add_argument("--time-device", default="/device:CPU:0", help="clgraph's latency device")
    ap.add_argument("--repeats", type=int, default=5, help="alternating rounds (default 5)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per round (default 10)")
    ap.add_argument("--no-latency", action="store_true", help="accuracy only")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of each engine (default 2): PyTorch's, ONNX Runtime's "
                    "intra-op, CLGRAPH_HOST_THREADS")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per subprocess")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of text")
    a = ap.parse_args()
    a.device = a.device or ["/device:CPU:0"]
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            ap.error(f"--models: {m} is not one of {', '.join(MODELS)}")
    try:
        batches = [int(b) for b in a.batches.split(",") if b]
    except ValueError:
        ap.error(f"--batches {a.batches}: want comma-separated whole numbers")
    if not batches or min(batches) < 1 or a.repeats < 1 or a.runs < 1 or a.threads < 1:
        ap.error("--batches, --repeats, --runs and --threads want numbers >= 1")
    if not os.path.exists(os.path.join(a.ort_dir, "node_modules", "onnxruntime-node")):
        sys.exit(f"compare_onnx.py: no onnxruntime-node under {a.ort_dir} (run "
                 f"tools/get-ort.sh {a.ort_dir}, or see --ort-dir)")
    if not os.access(a.clgraph, os.X_OK):
        print(f"compare_onnx.py: {a.clgraph} is not an executable (see --clgraph): clgraph's "
              "runs will report that", file=sys.stderr)
    a.clgraph = os.path.abspath(a.clgraph)
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(a.threads)
    run = Runner(a)
    result = {"machine": machine(), "torch": torch.__version__,
              "torchvision": torchvision.__version__, "onnx": onnx.__version__,
              "opset": a.opset, "threads": a.threads, "rtol": a.rtol, "cases": []}
    if not a.json:
        m = result["machine"]
        print(f"{m['cpus']} CPUs ({m['isa']}), load {m['loadavg'][0]:.1f}; PyTorch "
              f"{torch.__version__}, {a.threads} threads per engine")
    all_ok = True
    for name in models:
        model, shape = build(name, a.seed, not a.lrn_decomposed)
        ref_model = copy.deepcopy(model).double()
        for batch in batches:
            stem = os.path.join(a.out, f"{name}_b{batch}")
            rng = np.random.default_rng(a.seed)
            x_np = rng.standard_normal((batch,) + shape).astype(np.float32)
            inp = stem + ".input.npy"
            np.save(inp, x_np)
            x = torch.from_numpy(x_np)
            path = stem + ".onnx"
            case = {"model": name, "batch": batch, "onnx": path, "input": inp,
                    "export": export(model, x, path, a.opset, a.keep_batchnorm)}
            with torch.inference_mode():
                ref = ref_model(x.double()).numpy()
                f32 = model(x).numpy()
            np.save(stem + ".torch_float64.npy", ref)
            case["accuracy"] = accuracy(run, a, path, inp, ref, f32, stem)
            all_ok &= all(e["ok"] for e in case["accuracy"]["clgraph"].values())
            if not a.no_latency:
                case["latency"] = latency(run, a, model, x, path, inp)
            result["cases"].append(case)
            if not a.json:
                print_case(case, a)
                sys.stdout.flush()
    result["machine"]["loadavg_end"] = list(os.getloadavg())
    if a.json:
        print(json.dumps(result))
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
