#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (npm's onnxruntime-node, CPU execution provider): the
// yardstick tools/compare_onnx.py times clgraph against. Never needed by the build or tests.
//
//   NODE_PATH=$(tools/get-ort.sh) node tools/ort_run.js MODEL.onnx \
//       [--input NAME=FILE.npy]... [--out-dir DIR] [--runs N] [--threads T] [--profile FILE]
//
// Loads MODEL (graph optimizations "all", sequential execution, T intra-op threads, default
// 2, one inter-op thread), feeds each input from its .npy file, runs it once untimed (warm:
// ONNX Runtime plans and allocates in its first run), then N timed runs (default 10), each
// timed around session.run alone (no load, no file I/O). Prints one JSON line: load_ms,
// first_ms, run_ms (every timed run), median_ms, min_ms, the ONNX Runtime version and, per
// output, name, dtype, shape and (with --out-dir) the .npy file holding the last run's value,
// named as `clgraph run --out-dir` names it (each character outside [A-Za-z0-9._-] -> '_').
// --profile FILE: ONNX Runtime's own profile of every run (its Chrome trace: a model_run span
// per run, a *_kernel_time span per node) into FILE, for tools/trace_op_medians.py to set its
// per-node medians beside clgraph's (the profiling costs the timed runs a little).
'use strict';
const fs = require('fs');
const path = require('path');

function die(msg) {
  process.stderr.write(`ort_run.js: ${msg}\n`);
  process.exit(2);
}

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  die(`cannot load onnxruntime-node (${e.message}); put the folder tools/get-ort.sh prints ` +
      'in NODE_PATH');
}

// numpy's descr <-> ONNX Runtime's tensor types and the typed arrays that hold them.
const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i4': ['int32', Int32Array], '<i8': ['int64', BigInt64Array],
  '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};
const ORT_DESCR = {};
for (const [descr, [type]] of Object.entries(NPY_TYPES)) ORT_DESCR[type] = descr;

// .npy versions 1-3, C order, the little-endian types above.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY')
    die(`${file}: not a .npy file (no \\x93NUMPY magic)`);
  const major = buf.readUInt8(6);
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) die(`${file}: unreadable .npy header ${header.trim()}`);
  if (fortran[1] === 'True') die(`${file}: Fortran order is not supported`);
  const t = NPY_TYPES[descr[1]];
  if (!t) die(`${file}: dtype ${descr[1]} is not one of ${Object.keys(NPY_TYPES).join(', ')}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const data = buf.subarray(start + hlen);
  const bytes = count * t[1].BYTES_PER_ELEMENT;
  if (data.length !== bytes) die(`${file}: ${data.length} data bytes, shape needs ${bytes}`);
  // A copy: the typed array needs its own aligned buffer.
  const arr = new t[1](new ArrayBuffer(bytes));
  new Uint8Array(arr.buffer).set(data);
  return new ort.Tensor(t[0], t[0] === 'bool' ? Uint8Array.from(arr) : arr, dims);
}

function writeNpy(file, tensor) {
  const descr = ORT_DESCR[tensor.type];
  if (!descr) die(`output of type ${tensor.type} cannot be written as .npy`);
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const head = Buffer.alloc(10);
  head.writeUInt8(0x93, 0);
  head.write('NUMPY', 1, 'latin1');
  head.writeUInt8(1, 6);
  head.writeUInt8(0, 7);
  head.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

function parseArgs(argv) {
  const a = { model: null, inputs: [], outDir: null, runs: 10, threads: 2, profile: null };
  for (let i = 0; i < argv.length; i++) {
    const opt = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) die(`${opt} needs a value`);
      return argv[++i];
    };
    const count = (name, min) => {
      const v = value();
      if (!/^\d+$/.test(v) || Number(v) < min) die(`${name} '${v}': want a whole number >= ${min}`);
      return Number(v);
    };
    if (opt === '--input') {
      const v = value();
      const eq = v.indexOf('=');
      if (eq <= 0 || eq === v.length - 1) die(`--input '${v}': want NAME=FILE.npy`);
      a.inputs.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (opt === '--out-dir') {
      a.outDir = value();
    } else if (opt === '--runs') {
      a.runs = count('--runs', 1);
    } else if (opt === '--threads') {
      a.threads = count('--threads', 1);
    } else if (opt === '--profile') {
      a.profile = value();
    } else if (opt.startsWith('--')) {
      die(`unknown option ${opt}`);
    } else if (a.model === null) {
      a.model = opt;
    } else {
      die(`one MODEL only (got ${a.model} and ${opt})`);
    }
  }
  if (a.model === null) die('a MODEL is required');
  return a;
}

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: a.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    ...(a.profile ? {
      enableProfiling: true,
      profileFilePrefix: path.join(path.dirname(path.resolve(a.profile)),
        `.ort_profile_${process.pid}`),
    } : {}),
  });
  const loadMs = ms(t0);
  const feeds = {};
  for (const [name, file] of a.inputs) {
    if (!session.inputNames.includes(name))
      die(`--input ${name}: ${a.model} has no input of that name (its inputs: ` +
          `${session.inputNames.join(', ')})`);
    feeds[name] = readNpy(file);
  }
  for (const name of session.inputNames)
    if (!(name in feeds)) die(`input ${name} not given (--input ${name}=FILE.npy)`);
  const t1 = process.hrtime.bigint();
  let out = await session.run(feeds);
  const firstMs = ms(t1);
  const times = [];
  for (let k = 0; k < a.runs; k++) {
    const t = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(ms(t));
  }
  const sorted = [...times].sort((x, y) => x - y);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  if (a.outDir) fs.mkdirSync(a.outDir, { recursive: true });
  const outputs = session.outputNames.map((name) => {
    const t = out[name];
    let file = null;
    if (a.outDir) {
      file = path.join(a.outDir, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy');
      writeNpy(file, t);
    }
    return { name, dtype: t.type, shape: t.dims.map(Number), file };
  });
  if (a.profile) {
    // ONNX Runtime names its file after the prefix and the time (onnxruntime-node returns no
    // name): the newest such file is moved to the name asked for.
    await session.endProfiling();
    const dir = path.dirname(path.resolve(a.profile));
    const made = fs.readdirSync(dir).filter((f) => f.startsWith(`.ort_profile_${process.pid}`))
      .map((f) => path.join(dir, f));
    if (made.length === 0) die(`ONNX Runtime wrote no profile in ${dir}`);
    made.sort((x, y) => fs.statSync(y).mtimeMs - fs.statSync(x).mtimeMs);
    fs.renameSync(made[0], a.profile);
    for (const f of made.slice(1)) fs.unlinkSync(f);
  }
  let version = null;
  try {
    version = require('onnxruntime-node/package.json').version;
  } catch (e) {
    version = null;
  }
  process.stdout.write(JSON.stringify({
    engine: 'onnxruntime-node', version, threads: a.threads, load_ms: loadMs, first_ms: firstMs,
    run_ms: times, median_ms: median, min_ms: sorted[0], outputs,
  }) + '\n');
  if (session.release) await session.release();
}

main().catch((e) => {
  process.stderr.write(`ort_run.js: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
