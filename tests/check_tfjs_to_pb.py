#!/usr/bin/python3
"""tools/tfjs_to_pb.py on tests/data/tfjs/converter/ (a hand-written tfjs graph model whose
weights cover every encoding tfjs's converter writes), checked against values worked out by
hand from tfjs's documented decoding (io_utils.decodeWeights: float16 bits, q * scale + min,
Math.round for int32), and every malformed model it must refuse, each with its message.

    /usr/bin/python3 tests/check_tfjs_to_pb.py SOURCE_DIR     (CTest: tfjs_to_pb)

The .pb is read back with python3-protobuf's own parser over classes protoc generates from
tools/proto/tensorflow/*.proto, not with anything of the converter's.
"""

import importlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
TOOL = os.path.join(SRC, "tools", "tfjs_to_pb.py")
MODEL = os.path.join(SRC, "tests", "data", "tfjs", "converter")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def convert(model_dir, out):
    return subprocess.run([sys.executable, TOOL, os.path.join(model_dir, "model.json"), out],
                          capture_output=True, text=True)


def main():
    work = tempfile.mkdtemp(prefix="check_tfjs_to_pb.")
    try:
        subprocess.run(["protoc", "-I" + os.path.join(SRC, "tools", "proto"), "--python_out=" + work]
                       + ["tensorflow/%s.proto" % n for n in
                          ("types", "tensor_shape", "tensor", "attr_value", "node_def", "graph")],
                       check=True)
        sys.path.insert(0, work)
        graph_pb2 = importlib.import_module("tensorflow.graph_pb2")
        types_pb2 = importlib.import_module("tensorflow.types_pb2")
        DT = types_pb2.DataType.Value

        out = os.path.join(work, "model.pb")
        r = convert(MODEL, out)
        check(r.returncode == 0, "the converter refused the good model: " + r.stderr.strip())
        if r.returncode != 0:
            return 1
        gd = graph_pb2.GraphDef()
        with open(out, "rb") as f:
            gd.ParseFromString(f.read())
        nodes = {n.name: n for n in gd.node}
        check([n.name for n in gd.node] == ["x", "w16", "b8", "c16", "i8", "f32", "d", "l", "flags",
                                            "inline", "y", "out"], "node order: %s" % [n.name for n in gd.node])
        check(gd.versions.producer == 1286, "versions.producer %d" % gd.versions.producer)

        def const(name, dtype, shape, fmt, want):
            t = nodes[name].attr["value"].tensor
            check(t.dtype == DT(dtype), "%s: dtype %s" % (name, types_pb2.DataType.Name(t.dtype)))
            check([d.size for d in t.tensor_shape.dim] == shape, "%s: shape %s" % (name, t.tensor_shape))
            n = len(want)
            check(len(t.tensor_content) == n * struct.calcsize("<" + fmt),
                  "%s: %d content bytes" % (name, len(t.tensor_content)))
            if len(t.tensor_content) == n * struct.calcsize("<" + fmt):
                got = list(struct.unpack("<%d%s" % (n, fmt), t.tensor_content))
                check(got == want, "%s: values %s, want %s" % (name, got, want))

        # float16 0x3C00, 0xC000, 0x3555, 0x0001 (the smallest subnormal), 0x7BFF (the largest)
        const("w16", "DT_FLOAT", [5], "f", [1.0, -2.0, 0.333251953125, 2.0 ** -24, 65504.0])
        # uint8 q 0, 3, 255 with scale 0.5, min -1
        const("b8", "DT_FLOAT", [3], "f", [-1.0, 0.5, 126.5])
        # uint16 q 0, 1, 65535 with scale 0.25, min 10
        const("c16", "DT_FLOAT", [3], "f", [10.0, 10.25, 16393.75])
        # int32 from uint8 q 1, 3, 5, 8 with scale 0.5, min -2: -1.5 -0.5 0.5 2 by Math.round
        # (halves towards +infinity, where Python's round would give -2 0 0 2)
        const("i8", "DT_INT32", [2, 2], "i", [-1, 0, 1, 2])
        const("f32", "DT_FLOAT", [2, 1], "f", [1.5, -0.25])
        # a DT_DOUBLE Const stored by tfjs as a float32 weight: float32(0.1), widened exactly
        const("d", "DT_DOUBLE", [], "d", [0.100000001490116119384765625])
        # a DT_INT64 Const stored by tfjs as an int32 weight
        const("l", "DT_INT64", [2], "q", [-3, 2147483647])
        const("flags", "DT_BOOL", [3], "B", [1, 0, 1])
        t = nodes["inline"].attr["value"].tensor
        check(list(t.int_val) == [7, 8] and not t.tensor_content and
              [d.size for d in t.tensor_shape.dim] == [3], "inline: the JSON's own value kept: %s" % t)

        x = nodes["x"]
        check(x.op == "Placeholder" and x.attr["dtype"].type == DT("DT_FLOAT") and
              [d.size for d in x.attr["shape"].shape.dim] == [-1, 2], "x: %s" % x)
        y = nodes["y"]
        check(y.op == "_FusedMatMul" and list(y.input) == ["x", "f32", "b8", "^inline"] and
              y.device == "/device:CPU:0", "y: op, inputs or device: %s" % y)
        check(list(y.attr["fused_ops"].list.s) == [b"BiasAdd"], "y: fused_ops %s" % y.attr["fused_ops"])
        check(y.attr["num_args"].i == 1 and y.attr["T"].type == DT("DT_FLOAT") and
              y.attr["transpose_a"].HasField("b") and not y.attr["transpose_a"].b,
              "y: num_args, T or transpose_a")
        check(y.attr["epsilon"].f == struct.unpack("<f", struct.pack("<f", 1e-4))[0], "y: epsilon")
        check(list(nodes["out"].input) == ["y:0"], "out: input %s" % list(nodes["out"].input))

        # Malformed models: each refused with exit 1 and a message that says what is wrong.
        with open(os.path.join(MODEL, "model.json")) as f:
            good = json.load(f)
        with open(os.path.join(MODEL, "weights.bin"), "rb") as f:
            bin_ = f.read()

        def bad(label, edit, message, data=None):
            d = os.path.join(work, label)
            os.mkdir(d)
            m = json.loads(json.dumps(good))
            edit(m)
            with open(os.path.join(d, "model.json"), "w") as f:
                json.dump(m, f)
            if data is not False:
                with open(os.path.join(d, "weights.bin"), "wb") as f:
                    f.write(bin_ if data is None else data)
            r = convert(d, os.path.join(d, "out.pb"))
            check(r.returncode == 1, "%s: exit %d, want 1 (%s)" % (label, r.returncode, r.stderr.strip()))
            check(message in r.stderr, "%s: message %r lacks %r" % (label, r.stderr.strip(), message))
            check(not os.path.exists(os.path.join(d, "out.pb")), "%s: wrote a .pb anyway" % label)

        W = lambda m: m["weightsManifest"][0]["weights"]
        keep = lambda m: None
        bad("short", keep, "weight flags needs bytes 43..46 but the shards hold 45", bin_[:-1])
        bad("long", keep, "the shards hold 47 bytes, the weights use 46", bin_ + b"\0")
        bad("noshard", keep, "shard weights.bin:", False)
        bad("nopaths", lambda m: m["weightsManifest"][0].update(paths=[]), "names no shard file")
        bad("noname", lambda m: W(m)[0].update(name="nowhere"), "weight nowhere names no node")
        bad("notconst", lambda m: W(m)[0].update(name="y"), "weight y is for a _FusedMatMul node")
        bad("quant", lambda m: W(m)[0]["quantization"].update(dtype="int4"),
            "unknown quantization dtype 'int4'")
        bad("noscale", lambda m: W(m)[1]["quantization"].pop("scale"), "without scale and min")
        bad("dtype", lambda m: W(m)[4].update(dtype="complex64"), "no name, shape or known dtype")
        bad("twice", lambda m: W(m)[1].update(name="w16"), "weight w16 is listed twice")
        bad("shape", lambda m: W(m)[4].update(shape=[1, 2]), "Const f32 has shape [2, 1], its weight [1, 2]")
        bad("mismatch", lambda m: W(m)[4].update(dtype="int32"), "Const f32 is DT_FLOAT, its weight DT_INT32")
        # widened only where the Const's dtype attr and its value agree on the wide dtype (as the
        # C reader: tests/test_import.c's test_tfjs_wide)
        node = lambda m, name: [n for n in m["modelTopology"]["node"] if n["name"] == name][0]
        bad("narrow", lambda m: node(m, "l")["attr"]["value"]["tensor"].update(dtype="DT_INT32"),
            "Const l is DT_INT32, its weight DT_INT64")
        bad("negative", lambda m: W(m)[4].update(shape=[-1, 2]), "is not a list of sizes >= 0")
        bad("library", lambda m: m["modelTopology"]["library"].update(function=[{}]), "modelTopology:")
        bad("twonodes", lambda m: m["modelTopology"]["node"].append({"name": "x", "op": "NoOp"}),
            "two nodes named x")
        bad("notgraph", lambda m: m.update(format="layers-model"), "not a graph-model")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d checks failed" % len(failures))
        return 1
    print("tools/tfjs_to_pb.py: every weight encoding decoded as tfjs does; 17 malformed models refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
