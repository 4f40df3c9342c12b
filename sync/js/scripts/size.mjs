// The package's size as a page ships it: src/index.js bundled and
// minified by esbuild with its dependencies (automerge's JavaScript, the
// slim build, and msgpack; automerge's WebAssembly is a separate file the
// page fetches and is not counted), then gzipped. Fails when it grows past
// BUDGET bytes, so a change that adds weight is a decision, not an
// accident. The package's own code has its budget too (OWN_BUDGET), so
// that its growth is not hidden by a smaller dependency. `node
// scripts/size.mjs --print` only reports.

import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

/**
 * Gzipped bytes of the bundle with its dependencies; raise it
 * deliberately. 37.5 KiB since undo and redo (src/undo.js; see
 * OWN_BUDGET).
 */
const BUDGET = 37.5 * 1024;
/**
 * Gzipped bytes of the package's own code. 14 KiB since a rebase's carry
 * places a written answer's change among others' edits one by one (a
 * difference algorithm, about 0.6 KiB) and init warms automerge; 14.5 KiB
 * since requests outlive a lost connection and the reconnect follows the
 * Go client's policy (a page's own sockets use its reconnectDelay); 15 KiB
 * since Client's methods call the functions of the modules that implement
 * them (connection.js, apply.js, edits.js, requests.js, ...), a line each,
 * about 0.45 KiB; 17.5 KiB since undo and redo of a member's own edits
 * (src/undo.js and its hooks, about 2.3 KiB: the edit groups and their
 * stacks, stored with the drafts; typing bursts replayed character by
 * character, so that a text undo knows which characters are the burst's;
 * the revert on those characters, and on the copies an earlier undo
 * inserted of them), for which nothing of the same size could go: the
 * package's code was already at its budget with no dead weight found.
 */
const OWN_BUDGET = 17.5 * 1024;

/**
 * @param {string[]} external
 * @returns {Promise<{min: number, gz: number}>}
 */
async function measure(external) {
  const out = await esbuild.build({
    entryPoints: [new URL("../src/index.js", import.meta.url).pathname],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: ["es2022"],
    external,
    write: false,
    logLevel: "warning",
  });
  const code = out.outputFiles[0].contents;
  return { min: code.length, gz: gzipSync(code, { level: 9 }).length };
}

const own = await measure(["@automerge/automerge", "@automerge/automerge/*", "@msgpack/msgpack"]);
const all = await measure([]);
const kb = (/** @type {number} */ n) => `${(n / 1024).toFixed(1)} KiB`;
console.log(`@accord-crdt/client alone: ${kb(own.min)} minified, ${kb(own.gz)} gzipped (budget ${kb(OWN_BUDGET)})`);
console.log(`with automerge (JavaScript, no wasm) and msgpack: ${kb(all.min)} minified, ${kb(all.gz)} gzipped (budget ${kb(BUDGET)})`);
let over = false;
for (const [what, gz, budget] of /** @type {[string, number, number][]} */ ([["the package's own code", own.gz, OWN_BUDGET], ["the bundle", all.gz, BUDGET]])) {
  if (gz <= budget) continue;
  over = true;
  console.error(`${what} is ${gz - budget} bytes over its budget: make it smaller, or raise the budget in scripts/size.mjs and say why`);
}
if (over && !process.argv.includes("--print")) process.exit(1);
