#!/usr/bin/python3
"""Runs `clgraph run` on the reference fixtures under tests/data/tfjs/ (inputs and TensorFlow.js
cpu-backend outputs made by tools/compare_tfjs.js) and compares every output with the
manifest's tolerances: |clgraph - tfjs| <= atol + rtol * |tfjs|, shapes equal.

    /usr/bin/python3 tests/check_tfjs_fixtures.py CLGRAPH [--models DIR] [--device DEV]
                                                  [--format pb] [--unpin] [FIXTURE ...]

The models come from ci/get-models.sh's cache (DIR, default: what ci/get-models.sh prints,
which fetches the package once); each is checked against the sha256 its manifest names, so a
different model is a failure, never a silent pass. A fixture whose model is committed
(tests/data/tfjs/models/) is run from there. --format pb runs the frozen .pb that
tools/tfjs_to_pb.py makes of each model instead of its model.json. --unpin (with --device) runs
a copy of each model.json without its nodes' `device` fields: the converter pins most
convolutions to /device:CPU:0, so only then do DEV's kernels compute the whole graph, and at
least 95% of its nodes must run on DEV. Exit 0 only when every fixture ran and matched.
"""

import argparse
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DATA = os.path.join(SRC, "tests", "data", "tfjs")

NPY = {"<f2": ("e", 2), "<f4": ("f", 4), "<f8": ("d", 8), "|i1": ("b", 1), "<i2": ("h", 2),
       "<i4": ("i", 4), "<i8": ("q", 8), "|u1": ("B", 1), "|b1": ("B", 1), "<u2": ("H", 2)}


def read_npy(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:6] != b"\x93NUMPY":
        raise ValueError("%s: not a .npy file" % path)
    if b[6] == 1:
        (hlen,), off = struct.unpack("<H", b[8:10]), 10
    elif b[6] in (2, 3):
        (hlen,), off = struct.unpack("<I", b[8:12]), 12
    else:
        raise ValueError("%s: .npy version %d" % (path, b[6]))
    header = b[off:off + hlen].decode("latin1")
    descr = re.search(r"'descr':\s*'([^']+)'", header)
    order = re.search(r"'fortran_order':\s*(True|False)", header)
    shape = re.search(r"'shape':\s*\(([^)]*)\)", header)
    if not descr or not order or not shape or order.group(1) != "False" or descr.group(1) not in NPY:
        raise ValueError("%s: header %s" % (path, header.strip()))
    dims = [int(s) for s in shape.group(1).split(",") if s.strip()]
    code, size = NPY[descr.group(1)]
    n = 1
    for d in dims:
        n *= d
    data = b[off + hlen:]
    if len(data) != n * size:
        raise ValueError("%s: %d data bytes for shape %s" % (path, len(data), dims))
    return dims, struct.unpack("<%d%s" % (n, code), data)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def compare(got, ref, rtol, atol):
    """None when they match, else what differs (the count and the worst element)."""
    (gs, gv), (rs, rv) = got, ref
    if gs != rs:
        return "shape %s, tfjs %s" % (gs, rs)
    bad, worst, at = 0, 0.0, -1
    for i, (a, b) in enumerate(zip(gv, rv)):
        if a != a and b != b:  # NaN where tfjs has NaN
            continue
        err = abs(a - b)
        lim = atol + rtol * abs(b)
        if not err <= lim:
            bad += 1
            if err != err or err / lim > worst:
                worst, at = (float("inf") if err != err else err / lim), i
    if bad:
        return "%d of %d values beyond tolerance, the worst at %d: %r vs tfjs %r" % (
            bad, len(rv), at, gv[at], rv[at])
    return None


def unpinned_copy(model, folder):
    """A copy of a tfjs model.json without any node's device field, its shards linked beside it."""
    with open(model) as f:
        m = json.load(f)
    topo = m.get("modelTopology", {})
    nodes = list(topo.get("node", []))
    for fn in topo.get("library", {}).get("function", []):
        nodes += fn.get("nodeDef", [])
    for n in nodes:
        n.pop("device", None)
    os.makedirs(folder, exist_ok=True)
    for group in m.get("weightsManifest", []):
        for p in group.get("paths", []):
            link = os.path.join(folder, p)
            if not os.path.lexists(link):
                os.makedirs(os.path.dirname(link) or folder, exist_ok=True)
                os.symlink(os.path.join(os.path.dirname(os.path.abspath(model)), p), link)
    copy = os.path.join(folder, os.path.basename(model))
    with open(copy, "w") as f:
        json.dump(m, f)
    return copy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("clgraph")
    ap.add_argument("--models")
    ap.add_argument("--device")
    ap.add_argument("--format", choices=("json", "pb"), default="json")
    ap.add_argument("--unpin", action="store_true")
    ap.add_argument("fixtures", nargs="*")
    args = ap.parse_intermixed_args()
    if args.unpin and (not args.device or args.format != "json"):
        ap.error("--unpin wants --device and the json format")
    names = args.fixtures or sorted(
        d for d in os.listdir(DATA) if os.path.isfile(os.path.join(DATA, d, "manifest.json")))
    models = args.models
    failures = []
    with tempfile.TemporaryDirectory(prefix="check_tfjs_fixtures.") as work:
        for name in names:
            with open(os.path.join(DATA, name, "manifest.json")) as f:
                man = json.load(f)
            if man["source"].startswith("tests/"):
                model = os.path.join(SRC, man["source"])
            else:
                if models is None:
                    r = subprocess.run(["bash", os.path.join(SRC, "ci", "get-models.sh")],
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        print("FAIL: ci/get-models.sh: %s" % r.stderr.strip())
                        return 1
                    models = r.stdout.strip().splitlines()[-1]
                model = os.path.join(models, man["model"])
            if not os.path.exists(model) or sha256(model) != man["sha256"]:
                failures.append("%s: %s is missing or not the model the fixture was made from" % (name, model))
                continue
            for w in man["weights"]:
                wp = os.path.join(os.path.dirname(model), w["file"])
                if not os.path.exists(wp) or sha256(wp) != w["sha256"]:
                    failures.append("%s: weights %s missing or changed" % (name, wp))
            if args.format == "pb":
                pb = os.path.join(work, name + ".pb")
                r = subprocess.run([sys.executable, os.path.join(SRC, "tools", "tfjs_to_pb.py"), model, pb],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append("%s: tools/tfjs_to_pb.py: %s" % (name, r.stderr.strip()))
                    continue
                model = pb
            if args.unpin:
                model = unpinned_copy(model, os.path.join(work, "unpinned"))
            out = os.path.join(work, name)
            cmd = [args.clgraph, "run", model, "--json", "--out-dir", out]
            for i in man["inputs"]:
                cmd += ["--input", "%s=%s" % (i["name"], os.path.join(DATA, name, i["file"]))]
                if i.get("bind"):  # a setting (rvm's downsample_ratio): a Const at import
                    cmd += ["--bind", i["name"]]
            for o in man["outputs"]:
                cmd += ["--output", o["name"]]
            if args.device:
                cmd += ["--device", args.device]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                failures.append("%s: clgraph run exit %d: %s" % (name, r.returncode, r.stderr.strip()[-400:]))
                continue
            try:
                res = json.loads(r.stdout)
            except ValueError as e:
                failures.append("%s: clgraph run --json printed no JSON (%s)" % (name, e))
                continue
            if args.device:
                # Soft placement may move what the device lacks; the model must still run there.
                want = args.device.split("device:")[-1].upper()
                placed = {d: c for d, c in res.get("devices", {}).items()}
                on = sum(c for d, c in placed.items() if d.upper().endswith(want))
                if on == 0:
                    failures.append("%s: no node ran on %s (devices: %s)" % (name, args.device, placed))
                    continue
                print("%s: %d of %d nodes on %s" % (name, on, sum(placed.values()), args.device))
                if args.unpin and on < 0.95 * sum(placed.values()):
                    failures.append("%s: unpinned, only %d of %d nodes ran on %s" % (
                        name, on, sum(placed.values()), args.device))
                    continue
            files = {}
            for o in res.get("outputs", []):
                files[o.get("name")] = o.get("file")
            for o in man["outputs"]:
                bare = o["name"][:-2] if o["name"].endswith(":0") else o["name"]
                f = files.get(o["name"]) or files.get(bare)
                if not f:
                    failures.append("%s: clgraph run wrote no output %s" % (name, o["name"]))
                    continue
                try:
                    why = compare(read_npy(f), read_npy(os.path.join(DATA, name, o["file"])),
                                  man["rtol"], man["atol"])
                except ValueError as e:
                    why = str(e)
                if why:
                    failures.append("%s: output %s: %s" % (name, o["name"], why))
            if not any(x.startswith(name + ":") for x in failures):
                print("%s: every output matches tfjs (rtol %g, atol %g)" % (name, man["rtol"], man["atol"]))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures or not names else 0


if __name__ == "__main__":
    sys.exit(main())
