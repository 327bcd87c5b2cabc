#!/usr/bin/python3
"""Turns a TensorFlow.js graph model (model.json and its .bin shards) into a frozen binary
GraphDef (.pb) with every weight as a Const node's tensor, so that the .pb reader can be
tested on the same real graphs as the tfjs reader.

    /usr/bin/python3 tools/tfjs_to_pb.py MODEL.json OUT.pb [--verify]

Needs Debian's protobuf-compiler and python3-protobuf (apt-get install protobuf-compiler
python3-protobuf; the python3 first on PATH may be another interpreter without it). The
message classes are generated at each run by protoc from tools/proto/tensorflow/*.proto,
our own copies of TensorFlow's .proto files with the fields we read.

The weights are decoded as tfjs's io_utils.decodeWeights does: float16 to float32, uint8 or
uint16 quantized as q * scale + min (in double, then rounded to float32; Math.round for an
int32 weight), float32/int32/bool as they are. A Const's tensor gets dtype, shape and
tensor_content (raw little-endian bytes); string weights go to string_val. modelTopology is
protobuf's JSON mapping of a GraphDef, read with json_format, so any field our .proto files
lack (a function library, say) is an error instead of something dropped without a word.

--verify reads the .pb back and checks every weight's bytes and every node against the JSON.
"""

import argparse
import array
import atexit
import importlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "proto")

# tfjs dtype -> (TensorFlow DataType name, bytes per value, struct code)
DTYPES = {
    "float32": ("DT_FLOAT", 4, "f"),
    "int32": ("DT_INT32", 4, "i"),
    "bool": ("DT_BOOL", 1, "B"),
    "string": ("DT_STRING", None, None),
}
QUANT_SIZE = {"uint8": 1, "uint16": 2, "float16": 2}



def widen(src, dst):
    def f(raw):
        n = len(raw) // struct.calcsize(src)
        return struct.pack("<%d%s" % (n, dst), *struct.unpack("<%d%s" % (n, src), raw))

    return f


# (weight dtype, the Const's dtype) -> conversion of the raw bytes
WIDEN = {("DT_FLOAT", "DT_DOUBLE"): widen("f", "d"), ("DT_INT32", "DT_INT64"): widen("i", "q")}


class Error(Exception):
    pass


def load_protos():
    """Generates the _pb2 modules from our .proto files into a temporary folder."""
    out = tempfile.mkdtemp(prefix="clgraph-proto-")
    atexit.register(shutil.rmtree, out, True)
    protos = sorted(
        os.path.join("tensorflow", f)
        for f in os.listdir(os.path.join(PROTO_DIR, "tensorflow"))
        if f.endswith(".proto")
    )
    try:
        subprocess.run(
            ["protoc", "-I" + PROTO_DIR, "--python_out=" + out] + protos,
            check=True,
        )
    except FileNotFoundError:
        raise Error("protoc not found (apt-get install protobuf-compiler)")
    except subprocess.CalledProcessError as e:
        raise Error("protoc failed on %s (exit %d)" % (PROTO_DIR, e.returncode))
    sys.path.insert(0, out)
    try:
        graph_pb2 = importlib.import_module("tensorflow.graph_pb2")
        types_pb2 = importlib.import_module("tensorflow.types_pb2")
        json_format = importlib.import_module("google.protobuf.json_format")
    except ImportError as e:
        raise Error("%s (run with Debian's /usr/bin/python3 and python3-protobuf)" % e)
    return graph_pb2, types_pb2, json_format


def num_elements(shape, what):
    n = 1
    for d in shape:
        if not isinstance(d, int) or d < 0:
            raise Error("%s: shape %s is not a list of sizes >= 0" % (what, shape))
        n *= d
    return n


def js_round(x):
    """JavaScript's Math.round: halves go towards +infinity."""
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def decode_weight(spec, data, offset, where):
    """Returns (dtype name, raw bytes or list of strings, bytes used) for one manifest entry."""
    name = spec.get("name")
    dtype = spec.get("dtype")
    shape = spec.get("shape")
    if not isinstance(name, str) or not isinstance(shape, list) or dtype not in DTYPES:
        raise Error("%s: weight %r has no name, shape or known dtype (%r)" % (where, name, dtype))
    n = num_elements(shape, "%s: weight %s" % (where, name))
    tf_dtype, size, code = DTYPES[dtype]
    q = spec.get("quantization")

    def take(count):
        if offset + count > len(data):
            raise Error(
                "%s: weight %s needs bytes %d..%d but the shards hold %d"
                % (where, name, offset, offset + count, len(data))
            )
        return data[offset : offset + count]

    if q is not None:
        qd = q.get("dtype")
        if qd not in QUANT_SIZE:
            raise Error("%s: weight %s: unknown quantization dtype %r" % (where, name, qd))
        raw = take(n * QUANT_SIZE[qd])
        if qd == "float16":
            if dtype != "float32":
                raise Error("%s: weight %s: float16 quantization of %s" % (where, name, dtype))
            # struct's 'e' is IEEE half, subnormals and all, exactly as tfjs's tables decode it.
            vals = struct.unpack("<%de" % n, raw)
            return tf_dtype, struct.pack("<%df" % n, *vals), len(raw)
        if "scale" not in q or "min" not in q:
            raise Error("%s: weight %s: %s quantization without scale and min" % (where, name, qd))
        scale, lo = float(q["scale"]), float(q["min"])
        qa = array.array("B" if qd == "uint8" else "H")
        qa.frombytes(raw)
        if sys.byteorder != "little":
            qa.byteswap()
        if dtype == "float32":
            return tf_dtype, struct.pack("<%df" % n, *[v * scale + lo for v in qa]), len(raw)
        if dtype == "int32":
            return tf_dtype, struct.pack("<%di" % n, *[js_round(v * scale + lo) for v in qa]), len(raw)
        raise Error("%s: weight %s: %s quantization of %s" % (where, name, qd, dtype))
    if dtype == "string":
        # Each value: a uint32 little-endian byte count, then the bytes.
        vals, used = [], 0
        for _ in range(n):
            (k,) = struct.unpack("<I", take(used + 4)[used:])
            used += 4
            vals.append(bytes(take(used + k)[used:]))
            used += k
        return tf_dtype, vals, used
    raw = take(n * size)
    return tf_dtype, bytes(raw), len(raw)


def read_model(path):
    try:
        with open(path, "rb") as f:
            model = json.load(f)
    except (OSError, ValueError) as e:
        raise Error("%s: %s" % (path, e))
    if not isinstance(model, dict) or not isinstance(model.get("modelTopology"), dict):
        raise Error("%s: no modelTopology (not a tfjs graph model)" % path)
    if model.get("format") not in (None, "graph-model"):
        raise Error("%s: format %r, not a graph-model" % (path, model.get("format")))
    manifest = model.get("weightsManifest", [])
    if not isinstance(manifest, list):
        raise Error("%s: weightsManifest is not a list" % path)
    base = os.path.dirname(os.path.abspath(path))
    weights = {}  # name -> (dtype name, bytes or strings)
    for gi, group in enumerate(manifest):
        where = "%s: weightsManifest[%d]" % (path, gi)
        paths = group.get("paths") if isinstance(group, dict) else None
        if not isinstance(paths, list) or not paths:
            raise Error("%s names no shard file" % where)
        chunks = []
        for p in paths:
            fp = os.path.join(base, p)
            try:
                with open(fp, "rb") as f:
                    chunks.append(f.read())
            except OSError as e:
                raise Error("%s: shard %s: %s" % (where, p, e))
        data = memoryview(b"".join(chunks))
        offset = 0
        for spec in group.get("weights", []):
            dt, value, used = decode_weight(spec, data, offset, where)
            if spec["name"] in weights:
                raise Error("%s: weight %s is listed twice" % (where, spec["name"]))
            weights[spec["name"]] = (dt, value, spec["shape"])
            offset += used
        if offset != len(data):
            raise Error("%s: the shards hold %d bytes, the weights use %d" % (where, len(data), offset))
    return model, weights


def convert(path, graph_pb2, types_pb2, json_format):
    model, weights = read_model(path)
    gd = graph_pb2.GraphDef()
    try:
        json_format.ParseDict(model["modelTopology"], gd)
    except json_format.ParseError as e:
        raise Error("%s: modelTopology: %s" % (path, e))
    by_name = {}
    for node in gd.node:
        if node.name in by_name:
            raise Error("%s: two nodes named %s" % (path, node.name))
        by_name[node.name] = node
    for wname, (dt, value, shape) in list(weights.items()):
        node = by_name.get(wname)
        if node is None:
            raise Error("%s: weight %s names no node" % (path, wname))
        if node.op != "Const":
            raise Error("%s: weight %s is for a %s node, not a Const" % (path, wname, node.op))
        t = node.attr["value"].tensor
        want = types_pb2.DataType.Value(dt)
        # tfjs has no float64 or int64: its converter stores such a Const as a float32 or
        # int32 weight and keeps the node's TensorFlow dtype. Widened back here (exactly), so
        # that the .pb is the graph TensorFlow had and its consumers get the dtype they expect.
        # The Const declares it by its dtype attr, else its value's dtype (as the C reader).
        declared = node.attr["dtype"].type if "dtype" in node.attr else t.dtype
        wide = WIDEN.get((dt, types_pb2.DataType.Name(declared)))
        if wide is not None:
            value = wide(value)
            dt, want = types_pb2.DataType.Name(declared), declared
            weights[wname] = (dt, value, shape)
        if t.dtype not in (0, want):
            raise Error(
                "%s: Const %s is %s, its weight %s"
                % (path, wname, types_pb2.DataType.Name(t.dtype), dt)
            )
        if "dtype" in node.attr and node.attr["dtype"].type not in (0, want):
            raise Error("%s: Const %s's dtype attr disagrees with its weight (%s)" % (path, wname, dt))
        old = [d.size for d in t.tensor_shape.dim]
        if t.HasField("tensor_shape") and old != list(shape):
            raise Error("%s: Const %s has shape %s, its weight %s" % (path, wname, old, shape))
        t.Clear()
        t.dtype = want
        for d in shape:
            t.tensor_shape.dim.add().size = d
        if isinstance(value, list):
            t.string_val.extend(value)
        else:
            t.tensor_content = value
    return model, weights, gd


def verify(out_path, model, weights, graph_pb2):
    """Reads the written .pb back: same nodes (names, ops, inputs, devices, attr names) as the
    JSON, and every weight's Const holds exactly the decoded bytes."""
    back = graph_pb2.GraphDef()
    with open(out_path, "rb") as f:
        back.ParseFromString(f.read())
    nodes = model["modelTopology"].get("node", [])
    if len(back.node) != len(nodes):
        raise Error("verify: %d nodes read back, the JSON has %d" % (len(back.node), len(nodes)))
    for jn, pn in zip(nodes, back.node):
        if (
            pn.name != jn.get("name", "")
            or pn.op != jn.get("op", "")
            or list(pn.input) != jn.get("input", [])
            or pn.device != jn.get("device", "")
            or sorted(pn.attr.keys()) != sorted(jn.get("attr", {}).keys())
        ):
            raise Error("verify: node %s differs from the JSON after the round trip" % pn.name)
    by_name = {n.name: n for n in back.node}
    for wname, (_, value, shape) in weights.items():
        t = by_name[wname].attr["value"].tensor
        got = list(t.string_val) if isinstance(value, list) else t.tensor_content
        if got != value or [d.size for d in t.tensor_shape.dim] != list(shape):
            raise Error("verify: Const %s does not hold its weight after the round trip" % wname)
    return len(back.node)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a tfjs graph model's model.json")
    ap.add_argument("out", help="the frozen GraphDef to write")
    ap.add_argument("--verify", action="store_true", help="read the .pb back and compare")
    args = ap.parse_args()
    try:
        graph_pb2, types_pb2, json_format = load_protos()
        model, weights, gd = convert(args.model, graph_pb2, types_pb2, json_format)
        data = gd.SerializeToString()
        tmp = "%s.tmp.%d" % (args.out, os.getpid())
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, args.out)
        msg = "%s: %d nodes, %d weights, %d bytes" % (args.out, len(gd.node), len(weights), len(data))
        if args.verify:
            verify(args.out, model, weights, graph_pb2)
            msg += ", verified"
        print(msg)
    except Error as e:
        print("tools/tfjs_to_pb.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
