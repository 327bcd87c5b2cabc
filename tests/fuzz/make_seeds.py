#!/usr/bin/env python3
"""Writes the hand-made seeds of tests/fuzz/corpus/<target>/seed_*.

The byte codes follow the decoders in fuzz_devname.c, fuzz_suballoc.c and fuzz_graph.c
(each opcode is one byte; see the fg_/fs_ functions for the operand bytes). Run from the
repository root: python3 tests/fuzz/make_seeds.py. Inputs that libFuzzer found and that
add coverage live beside these seeds, named by their SHA-1 (ci/fuzz.sh keeps new ones in
build/fuzz/work/, merge them with `-merge=1` when they matter).
"""
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed_" + name), "wb") as f:
        f.write(bytes(data))


# --- fuzz_devname: byte 0 picks the parsers (2 bits per spec), then "A\nB" ------------------
DEVNAME = {
    "full_full": (0, "/job:localhost/replica:0/task:0/device:GPU:0", "/device:GPU:0"),
    "legacy": (0, "/cpu:0", "/gpu:1"),
    "local": (5, "GPU:2", "cpu:0"),
    "scope": (10, "/device:gpu:1", "/job:worker/task:3"),
    "wildcards": (0, "/job:*/replica:*/task:*/device:*:*", "/device:GPU:*"),
    "conflict": (0, "/device:GPU:0", "/device:CPU:0"),
    "ids": (0, "/device:GPU:0", "/device:GPU:1"),
    "jobs": (0, "/job:a", "/job:b/replica:1"),
    "empty": (0, "", "/"),
    "bad": (0, "/device:", "//"),
    "overflow": (0, "/device:GPU:99999999999", "/replica:-1"),
    "order": (0, "/device:GPU:0/job:x/task:1", "/task:1/job:x"),
    "longname": (0, "/job:" + "a" * 70, "/device:" + "T" * 63 + ":1"),
    "garbage": (1, "\x01\xff/job:\x00", "GPU:"),
}
for name, (how, a, b) in DEVNAME.items():
    write("fuzz_devname", name, [how] + list(a.encode("latin-1")) + [10] + list(b.encode("latin-1")))

# --- fuzz_suballoc: byte 0 alignment; op%8: 0-2 alloc, 3-4 release, 5 add, 6 remove, 7 check --
ADD, REMOVE, CHECK = 5, 6, 7


def add_region(rid, units, kind=1):
    # id, multiple?, size kind, 2 size bytes, zero-size flag
    return [ADD, rid, 1, kind, units >> 8, units & 0xFF, 0]


def alloc(units, kind=1):
    return [0, kind, units >> 8, units & 0xFF, 0]


def release(i):
    return [3, 0, i]


write("fuzz_suballoc", "basic", [0] + add_region(1, 63) + alloc(3) + alloc(5) + alloc(1) +
      release(1) + release(0) + [CHECK] + alloc(7) + release(0) + release(0) + release(0) +
      [REMOVE, 1])
write("fuzz_suballoc", "two_regions", [2] + add_region(1, 31) + add_region(2, 15) +
      alloc(20) + alloc(20) + alloc(10) + [REMOVE, 1, REMOVE, 2] + release(0) + release(0) +
      [REMOVE, 2, CHECK])
write("fuzz_suballoc", "fill", [1] + add_region(0, 16) + alloc(1) * 18 + [CHECK] +
      release(3) * 8 + alloc(2) * 4)
write("fuzz_suballoc", "odd", [4, ADD, 3, 0, 0x81, 0, 9, 17, 0] + add_region(3, 9) +
      [0, 0x81, 0, 2, 200] + [0, 0, 0, 0, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0] + [3, 0x80, 0, 5, 0, 9])
write("fuzz_suballoc", "big", [0] + add_region(7, 60000, 2) + alloc(30000, 2) +
      alloc(30001, 2) + alloc(29999, 2) + release(0) + alloc(40000, 2))

# --- fuzz_graph: op%20, see fg_step ----------------------------------------------------------
C32, C64, PH, MM, ADDOP, SUB, MUL, ADDN, IDENT, MISUSE = 0, 1, 2, 3, 5, 6, 7, 8, 9, 10
PUSH, POP, NAME, RUN, SECOND, DEVICES, RESET = 11, 13, 14, 15, 17, 18, 19
SPECS = ["/cpu:0", "/device:GPU:0", "/device:GPU:1", "/gpu:3", "/device:GPU:7", "GPU:2", "gpu:1",
         "/job:localhost/replica:0/task:0/device:GPU:2", "/job:worker", "/device:CPU:1",
         "/device:TPU:0", "", None, "/device:GPU:*", "/replica:1", "//", "/device:", "cpu:x",
         "/job:localhost/device:cpu:0", "/GPU:0/cpu:0"]
NAMES = ["a", "b", "Const", "MatMul", "Const_1", "x/y", ".z", "_bad", "-bad", "", "with space",
         "A", "tower_0/MatMul"]


def dim_byte(d):
    return d if d < 5 else 192 + d


def const(dims, values, f64=False, via_tensor=False):
    out = [C64 if f64 else C32, len(dims)] + [dim_byte(d) for d in dims]
    out += [(v + 2) % 5 for v in values]
    return out + [0 if via_tensor else 1]


def const_big(dims, f64, seed=1):
    n = 1
    for d in dims:
        n *= d
    vals = [(seed * 7 + i * 3) % 5 for i in range(n)]
    return [C64 if f64 else C32, len(dims)] + [dim_byte(d) for d in dims] + vals + [1]


def placeholder(dims, dtype=0):
    out = [PH, dtype, len(dims)]
    for d in dims:
        out += [0, dim_byte(d)]  # 0: not a special value, then the dimension
    return out + ([0] if dims else [])


def push(spec):
    return [PUSH, SPECS.index(spec)]


def name(n):
    return [NAME, NAMES.index(n)]


def run(num_nodes, fetch, opts=(0, 0), feeds=None, new_session=True, placeholders=(),
        fails=False):
    """fetch: node indices; feeds: {node index: values}; placeholders: the indices of
    placeholder nodes (a placeholder is fed unless its byte is a multiple of 8, any other
    node only when its byte is a multiple of 16); fails: the session cannot be created (or
    the graph has an error), so the run reads no more bytes."""
    out = [RUN] + (list(opts) if new_session else [])
    if fails:
        return out
    feeds = feeds or {}
    for i in range(num_nodes):
        if i in feeds:
            out += [1 if i in placeholders else 16] + [(v + 2) % 5 for v in feeds[i]]
        else:
            out += [0 if i in placeholders else 1]
    out += [1, len(fetch) - 1] + list(fetch) + [1]
    return out


# S2: a, b on the default device, MatMul; log_device_placement on.
s2 = name("a") + const([2, 3], [1, 2, -1, 0, 1, 2]) + name("b") + const([3, 2], [2, 1, 0, -1, 1, 1])
s2 += [MM, 0, 1, 0] + run(3, [2], opts=(2, 0))
write("fuzz_graph", "s2", s2)
# S3: a, b on /cpu:0, MatMul outside any scope.
s3 = push("/cpu:0") + const([2, 3], [1, 2, -1, 0, 1, 2]) + const([3, 2], [2, 1, 0, -1, 1, 1])
s3 += [POP, MM, 0, 1, 0] + run(3, [2, 0])
write("fuzz_graph", "s3", s3)
# S7: towers on GPU:2 and GPU:3, AddN on the CPU.
s7 = (push("/job:localhost/replica:0/task:0/device:GPU:2") + const([2, 3], [1, 2, -1, 0, 1, 2]) +
      const([3, 2], [2, 1, 0, -1, 1, 1]) + [MM, 0, 1, 0, POP] + push("/gpu:3") +
      const([2, 3], [1, 1, 1, 0, 1, 2]) + const([3, 2], [2, 1, 0, -1, 1, 1]) + [MM, 3, 4, 0, POP] +
      push("/cpu:0") + [ADDN, 2, 2, 5, POP] + run(7, [6]))
write("fuzz_graph", "s7", s7)
# S5/S6: a device that does not exist, without and with soft placement.
s5 = push("/device:GPU:7") + const([3, 2], [1, 2, 0, 1, 2, 0]) + [POP]
s5 += run(1, [0], opts=(0, 0), fails=True)
s5 += [RESET] + push("/device:GPU:7") + const([3, 2], [1, 2, 0, 1, 2, 0]) + [POP]
s5 += run(1, [0], opts=(1, 0))
write("fuzz_graph", "s5_s6", s5)
# Feeds: x (placeholder [3,4]) + c, x * 2, Identity, Sub; run twice, the graph grows between.
fd = placeholder([3, 4]) + const([3, 4], list(range(-2, 10))) + [ADDOP, 0, 1, MUL, 2, 0, IDENT, 3]
fd += run(5, [2, 4], feeds={0: list(range(12))}, placeholders=(0,))
fd += [SUB, 4, 1] + run(6, [5], feeds={0: [1] * 12}, new_session=False, placeholders=(0,))
write("fuzz_graph", "feeds", fd)
# Double precision, a MatMul big enough for CLBlast's indirect path (scratch from the allocator).
big = const_big([40, 33], True) + const_big([33, 20], True, 2) + [MM, 0, 1, 0]
big += const_big([20, 40], True, 3) + [MM, 2, 3, 0] + run(5, [4])
write("fuzz_graph", "matmul_f64_big", big)
big32 = const_big([41, 7], False) + const_big([41, 9], False, 2) + [MM, 0, 1, 1] + run(3, [2])
write("fuzz_graph", "matmul_f32_transposed", big32)
# Scalars against tensors, on several GPUs.
sc = const([], [2]) + push("/device:GPU:1") + const([2, 2], [1, 2, 0, -1]) + [MUL, 0, 1]
sc += [POP] + push("/job:localhost/replica:0/task:0/device:GPU:2") + [ADDOP, 1, 0, SUB, 3, 2, POP] + run(5, [4, 2])
write("fuzz_graph", "scalars", sc)
# Errors: a bad scope, a pop too many, misuse, names.
write("fuzz_graph", "bad_scope", push("//") + const([1], [1]) + run(0, [0], fails=True))
write("fuzz_graph", "bad_pop", const([1], [1]) + [POP] + run(1, [0], fails=True))
write("fuzz_graph", "bad_name", name("_bad") + const([1], [1]) + run(0, [0], fails=True))
write("fuzz_graph", "dup_name", name("a") + const([1], [1]) + name("a") + const([1], [1]))
write("fuzz_graph", "misuse", const([2], [1, 1]) + [MISUSE, 2, 0, RESET, MISUSE, 0, 0])
write("fuzz_graph", "half", placeholder([2, 2], dtype=3) + run(1, [0], fails=True) +
      [RESET] + placeholder([2, 2]) + [ADDOP, 0, 0] + run(2, [1], placeholders=(0,)))
write("fuzz_graph", "bad_options", const([1], [1]) + run(1, [0], opts=(0, 4), fails=True) +
      run(1, [0], opts=(0x20, 0), fails=True) + run(1, [0], opts=(0x40, 0), fails=True) +
      run(1, [0], opts=(0x60, 0)))
write("fuzz_graph", "second_session", const([2], [1, 2]) + [IDENT, 0] + run(2, [1]) +
      [SECOND] + run(2, [0, 1], opts=(1, 0x08))[1:])
write("fuzz_graph", "devices", [DEVICES, 0x24, 3, 2, 1, 5, 0, 1, 2, 3, 4] +
      [DEVICES, 0x07, 8, 0, 0, 3, 4, 4, 4])


# --- fuzz_graphdef: GraphDefs in the protobuf wire format ------------------------------------
def pb_varint(v):
    v &= (1 << 64) - 1
    out = []
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def pb_field(num, wire, payload):
    tag = pb_varint(num << 3 | wire)
    if wire == 0:
        return tag + pb_varint(payload)
    if wire == 2:
        return tag + pb_varint(len(payload)) + payload
    return tag + payload  # fixed32 / fixed64 bytes given


def pb_shape(dims):
    if dims is None:
        return pb_field(3, 0, 1)
    return b"".join(pb_field(2, 2, pb_field(1, 0, d)) for d in dims)


def pb_attr(key, value):
    return pb_field(5, 2, pb_field(1, 2, key.encode()) + pb_field(2, 2, value))


def pb_type(dt):
    return pb_field(6, 0, dt)


def pb_tensor_f32(dims, values, content=True):
    import struct
    t = pb_field(1, 0, 1) + pb_field(2, 2, pb_shape(dims))
    raw = struct.pack("<%df" % len(values), *values)
    t += pb_field(4, 2, raw) if content else pb_field(5, 2, raw)
    return pb_field(8, 2, t)


def pb_node(name, op, inputs=(), device=None, attrs=()):
    n = pb_field(1, 2, name.encode()) + pb_field(2, 2, op.encode())
    for i in inputs:
        n += pb_field(3, 2, i.encode())
    if device:
        n += pb_field(4, 2, device.encode())
    for k, v in attrs:
        n += pb_attr(k, v)
    return pb_field(1, 2, n)


def pb_list_s(*items):
    return pb_field(1, 2, b"".join(pb_field(2, 2, s.encode()) for s in items))


F32 = pb_type(1)
x_node = pb_node("x", "Placeholder", attrs=[("dtype", F32), ("shape", pb_field(7, 2, pb_shape([-1, 3])))])
w_node = pb_node("w", "Const", attrs=[("dtype", F32), ("value", pb_tensor_f32([3, 2], [1, -2, 0.5, 3, -1, 2]))])
b_node = pb_node("b", "Const", attrs=[("value", pb_tensor_f32([2], [0.5, -4], content=False))])
mm = pb_node("mm", "MatMul", ["x", "w"], attrs=[("T", F32), ("transpose_a", pb_field(5, 0, 0))])
ba = pb_node("ba", "BiasAdd", ["mm", "b"], "/device:CPU:0", [("T", F32), ("data_format", pb_field(2, 2, b"NHWC"))])
relu = pb_node("r", "Relu", ["ba", "^w"])
GD = {
    "mlp": x_node + w_node + b_node + mm + ba + relu,
    "mlp_reversed": relu + ba + mm + b_node + w_node + x_node,
    "fused": x_node + w_node + b_node + pb_node("f", "_FusedMatMul", ["x", "w", "b"], attrs=[
        ("fused_ops", pb_list_s("BiasAdd", "Relu")), ("num_args", pb_field(3, 0, 1))]),
    "shape_fold": pb_node("y", "Placeholder", attrs=[("dtype", F32), ("shape", pb_field(7, 2, pb_shape([4, 6])))]) +
    pb_node("x", "Placeholder", attrs=[("dtype", F32), ("shape", pb_field(7, 2, pb_shape([2, 3, 4])))]) +
    pb_node("s", "Shape", ["y"], attrs=[("out_type", pb_type(3))]) +
    pb_node("s64", "Cast", ["s"], attrs=[("DstT", pb_type(9))]) + pb_node("out", "Reshape", ["x", "s64"]),
    "cycle": pb_node("a", "Add", ["b", "b"]) + pb_node("b", "Add", ["a", "a"]),
    "no_input": pb_node("a", "Identity", ["ghost:1"]),
    "unknown_op": pb_node("lc", "LoopCond", []),
    "unknown_dtype": pb_node("k", "Const", attrs=[("value", pb_field(8, 2, pb_field(1, 0, 77)))]),
    "typed_fill": pb_node("k", "Const", attrs=[("value", pb_field(8, 2, pb_field(1, 0, 3) + pb_field(2, 2, pb_shape([4])) + pb_field(7, 0, 9)))]),
    "half": pb_node("h", "Const", attrs=[("value", pb_field(8, 2, pb_field(1, 0, 19) + pb_field(2, 2, pb_shape([2])) + pb_field(13, 2, pb_varint(0x3c00) + pb_varint(0xc000))))]),
    "versions": pb_field(4, 2, pb_field(1, 0, 27)) + x_node,
    "wrong_wire": pb_field(1, 0, 5),
    "truncated": (x_node + w_node)[:-5],
}
for name, data in GD.items():
    write("fuzz_graphdef", name, data)

# --- fuzz_tfjs: model.json, a 0 byte, the bytes of w.bin -------------------------------------
import json
import struct

TOPO = {"node": [
    {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"},
                                                "shape": {"shape": {"dim": [{"size": "1"}, {"size": "2"}]}}}},
    {"name": "w", "op": "Const", "attr": {"value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": {
        "dim": [{"size": "2"}, {"size": "2"}]}}}, "dtype": {"type": "DT_FLOAT"}}},
    {"name": "q", "op": "Const", "attr": {"value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": {
        "dim": [{"size": "2"}]}}}}},
    {"name": "mm", "op": "MatMul", "input": ["x", "w"], "attr": {"transpose_b": {"b": True}}},
    {"name": "y", "op": "AddV2", "input": ["mm", "q"]},
]}
WEIGHTS = [{"name": "w", "shape": [2, 2], "dtype": "float32"},
           {"name": "q", "shape": [2], "dtype": "float32",
            "quantization": {"dtype": "uint8", "scale": 0.5, "min": -1}}]
SHARD = struct.pack("<4f", 1, 2, -3, 0.25) + bytes([0, 200])


def tfjs(topology, manifest, shard, extra=None):
    m = {"format": "graph-model", "modelTopology": topology, "weightsManifest": manifest}
    m.update(extra or {})
    return json.dumps(m).encode() + b"\0" + shard


TJ = {
    "model": tfjs(TOPO, [{"paths": ["w.bin"], "weights": WEIGHTS}], SHARD,
                  {"signature": {"inputs": {"x:0": {"name": "x:0"}}, "outputs": {"y:0": {"name": "y:0"}}}}),
    "two_shards": tfjs(TOPO, [{"paths": ["w.bin", "v.bin"], "weights": WEIGHTS}], SHARD[:9]),
    "float16": tfjs(TOPO, [{"paths": ["w.bin"], "weights": [
        {"name": "w", "shape": [2, 2], "dtype": "float32", "quantization": {"dtype": "float16"}},
        {"name": "q", "shape": [2], "dtype": "float32", "quantization": {"dtype": "uint16", "scale": 0.1, "min": 0}}]}],
        struct.pack("<4H2H", 0x3c00, 0x4000, 0xc200, 0x3400, 1, 65535)),
    "short": tfjs(TOPO, [{"paths": ["w.bin"], "weights": WEIGHTS}], SHARD[:7]),
    "missing": tfjs(TOPO, [{"paths": ["nothere.bin"], "weights": WEIGHTS}], b""),
    "overlap": tfjs(TOPO, [{"paths": ["w.bin"], "weights": WEIGHTS[:1]}, {"paths": ["w.bin"], "weights": WEIGHTS[1:]}], SHARD),
    "no_paths": tfjs(TOPO, [{"weights": WEIGHTS}], SHARD),
    "attrs": tfjs({"node": [{"name": "c", "op": "Const", "attr": {"value": {"tensor": {
        "dtype": "DT_INT32", "tensorShape": {"dim": [{"size": "3"}]}, "intVal": [1, "2"]}}}},
        {"name": "l", "op": "Identity", "input": ["c"], "attr": {"list": {"list": {"i": ["1", 2], "s": []}},
                                                               "s": {"s": "TkhXQw=="}, "f": {"f": "NaN"}}}]}, [], b""),
    "bad_shape": tfjs({"node": {}}, [], b""),
}
for name, data in TJ.items():
    write("fuzz_tfjs", name, data)

# --- fuzz_onnx: ModelProtos (onnx.proto field numbers) ----------------------------------------
def ox_tensor(name, dims, values, dtype=1, raw=True):
    t = pb_field(1, 2, b"".join(pb_varint(d) for d in dims)) + pb_field(2, 0, dtype)
    t += pb_field(8, 2, name.encode())
    if raw:
        t += pb_field(9, 2, struct.pack("<%df" % len(values), *values))
    else:
        t += pb_field(4, 2, struct.pack("<%df" % len(values), *values))
    return t


def ox_value_info(name, dims):
    dim = b"".join(pb_field(1, 2, pb_field(1, 0, d) if d >= 0 else pb_field(2, 2, b"N")) for d in dims)
    return pb_field(1, 2, name.encode()) + pb_field(2, 2, pb_field(1, 2, pb_field(1, 0, 1) + pb_field(2, 2, dim)))


def ox_attr_i(name, v):
    return pb_field(5, 2, pb_field(1, 2, name.encode()) + pb_field(3, 0, v))


def ox_attr_ints(name, vs):
    return pb_field(5, 2, pb_field(1, 2, name.encode()) + pb_field(8, 2, b"".join(pb_varint(v) for v in vs)))


def ox_node(op, ins, outs, attrs=b"", domain=None):
    n = b"".join(pb_field(1, 2, i.encode()) for i in ins) + b"".join(pb_field(2, 2, o.encode()) for o in outs)
    n += pb_field(4, 2, op.encode()) + attrs
    if domain is not None:
        n += pb_field(7, 2, domain.encode())
    return pb_field(1, 2, n)


def ox_model(graph, opset=13):
    return pb_field(1, 0, 8) + pb_field(2, 2, b"seed") + pb_field(7, 2, graph) + \
        pb_field(8, 2, pb_field(1, 2, b"") + pb_field(2, 0, opset))


X4 = pb_field(11, 2, ox_value_info("x", [1, 2, 4, 4]))
W = pb_field(5, 2, ox_tensor("w", [3, 2, 3, 3], [0.1 * i for i in range(54)]))
B = pb_field(5, 2, ox_tensor("b", [3], [1, -1, 0.5], raw=False))
CONV = ox_node("Conv", ["x", "w", "b"], ["c"], ox_attr_ints("pads", [1, 1, 1, 1]))
OX = {
    "conv_relu": ox_model(W + B + X4 + CONV + ox_node("Relu", ["c"], ["y"]) + pb_field(12, 2, ox_value_info("y", [1, 3, 4, 4]))),
    "pool_flatten": ox_model(X4 + ox_node("MaxPool", ["x"], ["p"], ox_attr_ints("kernel_shape", [2, 2]) + ox_attr_i("ceil_mode", 1)) +
                             ox_node("Flatten", ["p"], ["y"]) + pb_field(12, 2, ox_value_info("y", [1, 8]))),
    "reshape_const": ox_model(pb_field(5, 2, pb_field(1, 2, pb_varint(2)) + pb_field(2, 0, 7) + pb_field(8, 2, b"s") + pb_field(7, 2, pb_varint(2) + pb_varint(16))) +
                              X4 + ox_node("Reshape", ["x", "s"], ["y"]) + pb_field(12, 2, ox_value_info("y", [2, 16]))),
    "dim_param": ox_model(pb_field(11, 2, ox_value_info("x", [-1, 3])) + ox_node("Sigmoid", ["x"], ["y"]) + pb_field(12, 2, ox_value_info("y", [-1, 3]))),
    "opset18": ox_model(X4 + ox_node("Relu", ["x"], ["y"]), opset=18),
    "domain": ox_model(X4 + ox_node("Relu", ["x"], ["y"], domain="com.example")),
    "size_lie": ox_model(pb_field(5, 2, ox_tensor("w", [3, 3], [1, 2])) + X4),
    "external": ox_model(pb_field(5, 2, pb_field(1, 2, pb_varint(2)) + pb_field(2, 0, 1) + pb_field(8, 2, b"e") +
                                  pb_field(13, 2, pb_field(1, 2, b"location") + pb_field(2, 2, b"../w.bin")) + pb_field(14, 0, 1))),
    "order": ox_model(X4 + ox_node("Relu", ["t"], ["y"]) + ox_node("Relu", ["x"], ["t"])),
    "truncated": ox_model(W + B + X4 + CONV)[:-9],
}
for name, data in OX.items():
    write("fuzz_onnx", name, data)
