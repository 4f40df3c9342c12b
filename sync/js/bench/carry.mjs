// What a writer pays to carry its draft onto a rebased document
// (replica.carryBase, then replica.carryOver), as in a busy decision:
// K members write a mark and their own line of a shared answer, round by
// round, for ROUNDS rounds (the history the rebase replaces); the carrying
// replica holds LOCAL edits the server has not accepted, and has missed
// MISSED of the others' last changes, which the rebase covered.
//
//   node bench/carry.mjs                  K=16 ROUNDS=20 LOCAL=2 MISSED=3
//   REPLICA=/path/to/replica.js node bench/carry.mjs   (another version)
//
// It prints the median and the 90th percentile of a carry, in ms.
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const R = await import(process.env.REPLICA ? pathToFileURL(process.env.REPLICA).href : "../src/replica.js");
const A = await import("@automerge/automerge/slim");
await R.init(readFileSync(fileURLToPath(new URL("../node_modules/@automerge/automerge/dist/automerge.wasm", import.meta.url))));

const env = (k, d) => Number(process.env[k] ?? d);
const K = env("K", 16), ROUNDS = env("ROUNDS", 20), LOCAL = env("LOCAL", 2), MISSED = env("MISSED", 3), RUNS = env("RUNS", 40);
const SERVER = "5e".repeat(16);
const opts = Array.from({ length: 10 }, (_, i) => ({ id: `o${i}`, label: `Option ${i}` }));
const crits = Array.from({ length: 5 }, (_, i) => ({ id: `c${i}`, label: `Criterion ${i}` }));
let start = R.create([{ id: "w", written: true }, { id: "m", options: opts, criteria: crits }], SERVER);
start = R.spliceText(start, "w", 0, 0, Array.from({ length: K }, (_, k) => `${k}:0\n`).join(""));
const bytes = A.save(start);
const actor = (k) => (k + 1).toString(16).padStart(2, "0").repeat(16);
const marks = ["yes", "partly", "no"];

function write(doc, k, r) {
  doc = R.setMark(doc, "m", `o${(r + k) % 10}`, `c${(r * 7 + k) % 5}`, marks[(r + k) % 3]);
  const t = R.readState(doc).drafts["1"].w.text;
  const i = t.indexOf(`\n${k}:`) + 1 || (t.startsWith(`${k}:`) ? 0 : -1);
  const from = i + `${k}:`.length;
  return R.spliceText(doc, "w", from, t.indexOf("\n", from) - from, String(r));
}

/** The server's document with the same values under one rebase change. */
function rebased(doc) {
  const clock = new Map();
  for (const c of A.getChangesMetaSince(doc, [])) clock.set(c.actor, Math.max(clock.get(c.actor) ?? 0, c.seq));
  const message = "rebase\n" + [...clock].map(([a, s]) => `${a}:${s}`).join(",");
  const { generation, ...rest } = A.toJS(doc);
  return A.save(A.change(A.init({ actor: SERVER }), { message }, (d) => {
    Object.assign(d, rest);
    d.generation = new A.Uint(Number(doc.generation));
  }));
}

const times = [];
for (let run = 0; run < RUNS; run++) {
  const reps = Array.from({ length: K }, (_, k) => A.load(bytes, { actor: actor(k) }));
  let server = A.load(bytes, { actor: SERVER });
  let missed = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const round = [];
    for (let k = 0; k < K; k++) {
      const h = A.getHeads(reps[k]);
      reps[k] = write(reps[k], k, r + run);
      round.push(...A.getChangesSince(reps[k], h));
    }
    [server] = A.applyChanges(server, round);
    const last = r === ROUNDS;
    missed = last ? round.slice(1, 1 + MISSED) : [];
    const seen = last ? round.slice(1 + MISSED) : round;
    for (let k = 0; k < K; k++) [reps[k]] = A.applyChanges(reps[k], seen);
  }
  let old = reps[0];
  const accepted = R.heads(old);
  for (let i = 0; i < LOCAL; i++) old = write(old, 0, 1000 + i);
  const next = R.load(rebased(server), actor(0));
  const t0 = performance.now();
  R.carryOver(old, R.carryBase(old, accepted, next), next);
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))].toFixed(2);
console.log(JSON.stringify({ K, ROUNDS, LOCAL, MISSED, changes: K * ROUNDS, carry_ms_p50: +q(0.5), carry_ms_p90: +q(0.9) }));
