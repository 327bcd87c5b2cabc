#!/usr/bin/env node
// The op census of the TensorFlow graphs: per graph its node count, its op types and those
// clgraph lacks; then the missing op types in the order that opens the most graphs soonest.
//
//   node tools/model_census.js [--models DIR] [--clgraph PATH] [--json] [GRAPH ...]
//
// What clgraph lacks comes from `clgraph inspect GRAPH --json` when the binary has that
// command (its op types that it says it cannot run), else from the op registry in
// src/ops/registry.c (the op names registered there, compared by name: the importer may map
// some op types onto others, which only `inspect` knows; the output says which source it used).
//
// The order: repeatedly take the graph that needs the fewest op types not yet taken (ties: the
// graph whose missing op types the most other graphs share), add its missing op types (the
// most used first), and count the graphs that are then open. Each line says how many graphs
// use the op type and how many are open once it and those above it are there.
"use strict";

const fs = require("fs");
const path = require("path");
const { spawnSync } = require("child_process");

const ROOT = path.resolve(__dirname, "..");

function parseArgs(argv) {
  const o = { models: null, clgraph: process.env.CLGRAPH_BIN || path.join(ROOT, "build/ci/clgraph"),
    json: false, graphs: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) fail(`${a} wants a value`, 2);
      return argv[++i];
    };
    if (a === "--models") o.models = val();
    else if (a === "--clgraph") o.clgraph = val();
    else if (a === "--json") o.json = true;
    else if (a.startsWith("--")) fail(`unknown option ${a}\nusage: node tools/model_census.js ` +
      "[--models DIR] [--clgraph PATH] [--json] [GRAPH ...]", 2);
    else o.graphs.push(a);
  }
  if (!o.models) {
    const cands = [process.env.CLGRAPH_MODELS_DIR, path.join(ROOT, "build/models/package/models"),
      "/work/cache/models/package/models"].filter(Boolean);
    o.models = cands.find((d) => fs.existsSync(d)) || cands[0];
  }
  return o;
}

function fail(msg, code) {
  process.stderr.write(`tools/model_census.js: ${msg}\n`);
  process.exit(code || 1);
}

// The op names src/ops/registry.c registers ("&clg_op_Conv2D," lines in its table).
function registryOps() {
  const f = path.join(ROOT, "src/ops/registry.c");
  const src = fs.readFileSync(f, "utf8");
  const table = /registry\[\]\s*=\s*\{([\s\S]*?)\};/.exec(src);
  if (!table) fail(`${f}: no registry[] table`);
  return new Set([...table[1].matchAll(/&clg_op_([A-Za-z0-9_]+)/g)].map((m) => m[1]));
}

// `clgraph inspect --json`: the op types it cannot run, or null when there is no such command.
// Reads an "unsupported" list (strings or {op}) or op_types entries with supported: false.
function inspectMissing(o, file) {
  if (!fs.existsSync(o.clgraph)) return null;
  const r = spawnSync(o.clgraph, ["inspect", file, "--json"], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.error || (r.status !== 0 && r.status !== 1)) return null;
  let j;
  try {
    j = JSON.parse(r.stdout);
  } catch (e) {
    return null;
  }
  const name = (x) => (typeof x === "string" ? x : x && (x.op || x.op_type || x.name));
  if (Array.isArray(j.unsupported)) return new Set(j.unsupported.map(name));
  if (Array.isArray(j.op_types) && j.op_types.some((x) => x && "supported" in x))
    return new Set(j.op_types.filter((x) => !x.supported).map(name));
  return null;
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  let files;
  if (o.graphs.length) files = o.graphs.map((g) => (g.endsWith(".json") ? g : path.join(o.models, `${g}.json`)));
  else {
    if (!fs.existsSync(o.models)) fail(`no models folder ${o.models} (run ci/get-models.sh)`);
    files = fs.readdirSync(o.models).filter((f) => f.endsWith(".json")).sort().map((f) => path.join(o.models, f));
  }
  let have = null;
  const sources = {};
  const graphs = [];
  for (const f of files) {
    let m;
    try {
      m = JSON.parse(fs.readFileSync(f, "utf8"));
    } catch (e) {
      fail(`${f}: ${e.message}`);
    }
    if (!m.modelTopology || !Array.isArray(m.modelTopology.node)) fail(`${f}: not a tfjs graph model`);
    const ops = {};
    for (const n of m.modelTopology.node) ops[n.op] = (ops[n.op] || 0) + 1;
    let missing = inspectMissing(o, f), from = "clgraph inspect --json";
    if (!missing) {
      if (!have) have = registryOps();
      missing = new Set(Object.keys(ops).filter((op) => !have.has(op)));
      from = "src/ops/registry.c (by name)";
    }
    sources[from] = (sources[from] || 0) + 1;
    graphs.push({ graph: path.basename(f, ".json"), nodes: m.modelTopology.node.length,
      op_types: Object.keys(ops).sort(), op_counts: ops, missing: [...missing].sort(), source: from });
  }

  // How many graphs use each missing op type.
  const users = {};
  for (const g of graphs) for (const op of g.missing) users[op] = (users[op] || 0) + 1;
  const taken = new Set(), order = [];
  const open = () => graphs.filter((g) => g.missing.every((op) => taken.has(op))).length;
  const initially = open();
  for (;;) {
    const left = graphs.filter((g) => g.missing.some((op) => !taken.has(op)));
    if (!left.length) break;
    const need = (g) => g.missing.filter((op) => !taken.has(op));
    const shared = (g) => need(g).reduce((s, op) => s + users[op], 0);
    left.sort((a, b) => need(a).length - need(b).length || shared(b) - shared(a) ||
      a.graph.localeCompare(b.graph));
    const ops = need(left[0]).sort((a, b) => users[b] - users[a] || a.localeCompare(b));
    for (const op of ops) {
      taken.add(op);
      order.push({ op, graphs_using: users[op], graphs_open: open(), for_graph: left[0].graph });
    }
  }
  const totalNodes = graphs.reduce((s, g) => s + g.nodes, 0);
  const source = Object.entries(sources).map(([k, n]) => `${k} (${n} graphs)`).join(", ");
  const allOps = new Set(graphs.flatMap((g) => g.op_types));
  if (o.json) {
    console.log(JSON.stringify({ source, graphs, total_nodes: totalNodes, op_types: allOps.size,
      open_now: initially, order }, null, 1));
    return;
  }
  console.log(`# ${graphs.length} graphs, ${totalNodes} nodes, ${allOps.size} op types; ` +
    `what clgraph lacks from ${source}`);
  const w = Math.max(...graphs.map((g) => g.graph.length));
  for (const g of graphs) {
    console.log(`${g.graph.padEnd(w)}  ${String(g.nodes).padStart(5)} nodes  ` +
      `${String(g.op_types.length).padStart(3)} op types  lacks ${g.missing.length}: ${g.missing.join(" ") || "-"}`);
  }
  console.log(`\n${initially} of ${graphs.length} graphs open today; the missing op types in the order ` +
    "that opens graphs soonest (op, graphs using it, graphs open with it and those above):");
  let n = 0;
  for (const r of order) {
    n++;
    console.log(`${String(n).padStart(3)}. ${r.op.padEnd(28)} used by ${String(r.graphs_using).padStart(2)}  ` +
      `open ${String(r.graphs_open).padStart(2)}  (${r.for_graph})`);
  }
}

main();
