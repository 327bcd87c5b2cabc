// Prints TensorFlow.js's outputs of a tfjs graph model at batch 1 on the input test_import.c
// feeds (input[i] = ((i * 7919) % 256) / 255, unknown dims 1), for test_import's real-model
// checks:   NODE_PATH=<folder with @tensorflow/tfjs> node tests/import_tfjs_reference.js MODEL.json
// (the CPU backend of @tensorflow/tfjs, installed with npm install --ignore-scripts).
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs');

async function main() {
  const file = process.argv[2];
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  const dir = path.dirname(file);
  const specs = [];
  const bufs = [];
  for (const g of json.weightsManifest) {
    specs.push(...g.weights);
    for (const p of g.paths) bufs.push(fs.readFileSync(path.join(dir, p)));
  }
  const all = Buffer.concat(bufs);
  const data = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  await tf.setBackend('cpu');
  const model = await tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: json.modelTopology, weightSpecs: specs, weightData: data,
    signature: json.signature || (json.userDefinedMetadata || {}).signature}));
  const input = model.inputs[0];
  const shape = input.shape.map((d) => (d < 0 ? 1 : d));
  const n = shape.reduce((a, b) => a * b, 1);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = ((i * 7919) % 256) / 255;
  const names = model.outputs.map((o) => o.name);
  let outs = model.execute({[input.name]: tf.tensor(x, shape)}, names);
  if (!Array.isArray(outs)) outs = [outs];
  names.forEach((name, k) => {
    const v = Array.from(outs[k].dataSync()).map((f) => f.toPrecision(9) + 'f');
    console.log(`${name} [${outs[k].shape}] {${v.join(', ')}}`);
  });
}
main();
