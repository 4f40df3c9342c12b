// Sums a V8 CPU profile's self time by function and by file, and the
// total time (self and callees) of the package's own functions and of
// automerge's JavaScript API: where a bench's time goes.
//
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/receive.mjs
//   node bench/profile.mjs /tmp/prof/CPU.*.cpuprofile [rows] [skip]
//
// With skip (function names, comma-separated), samples with any of them
// on their stack are left out: a bench's setup, e.g.
// w2Stream,w5Stream,frames,initial for receive.mjs.
// Functions are named file:function:line; time in (garbage collector),
// (program) and (idle) is V8's own, and wasm-function[...] is automerge's
// WebAssembly.
import { readFileSync } from "node:fs";

const [file, rows = "30", skip = ""] = process.argv.slice(2);
const skipped = new Set(skip.split(",").filter(Boolean));
if (!file) throw new Error("usage: node bench/profile.mjs <file.cpuprofile> [rows]");
const prof = JSON.parse(readFileSync(file, "utf8"));
/** @type {Map<number, any>} */
const nodes = new Map(prof.nodes.map((/** @type {any} */ n) => [n.id, n]));
/** @type {Map<number, number>} */
const parent = new Map();
for (const n of prof.nodes) for (const ch of n.children || []) parent.set(ch, n.id);
/** @param {number} id */
const setup = (id) => {
  for (let at = id; at !== undefined; at = parent.get(at)) if (skipped.has(nodes.get(at).callFrame.functionName)) return true;
  return false;
};
/** @type {Map<number, number>} */
const self = new Map();
for (let i = 0; i < prof.samples.length; i++) {
  const dt = prof.timeDeltas[i] ?? 0;
  if (skipped.size && setup(prof.samples[i])) continue;
  self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + dt);
}
/** @type {Map<string, number>} */
const byFn = new Map();
/** @type {Map<string, number>} */
const byFile = new Map();
let total = 0;
for (const [id, us] of self) {
  const f = nodes.get(id).callFrame;
  const where = (f.url || "").replace(/^file:\/\//, "").replace(/.*node_modules\//, "").replace(/.*\/sync\/js\//, "") || (f.functionName.startsWith("(") ? "" : "(native)");
  const name = `${where}${where ? ":" : ""}${f.functionName || "(anonymous)"}${f.url ? ":" + (f.lineNumber + 1) : ""}`;
  byFn.set(name, (byFn.get(name) ?? 0) + us);
  const fileKey = f.functionName.startsWith("wasm-function") ? "(automerge wasm)" : where || f.functionName;
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
  total += us;
}
// Total time of the functions of src/, bench/ and automerge's API
// (implementation.js), each sample counted once per function on its stack.
/** @type {Map<string, number>} */
const inclusive = new Map();
for (const [id, us] of self) {
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const f = nodes.get(at).callFrame;
    const m = /\/(src|bench)\/([^/]+)$|automerge\/dist\/mjs\/(implementation)\.js$/.exec(f.url || "");
    if (!m) continue;
    const name = `${m[2] || "automerge"}:${f.functionName || "(anonymous)"}`;
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + us);
  }
}
const show = (/** @type {string} */ title, /** @type {Map<string, number>} */ m) => {
  console.log(`\n${title} (ms, % of ${(total / 1000).toFixed(0)} ms)`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(rows))) {
    console.log(`${(us / 1000).toFixed(1).padStart(9)}  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
  }
};
show("self time by file", byFile);
show("self time by function", byFn);
show("total time of the package's functions and automerge's API", inclusive);
