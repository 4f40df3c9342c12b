// The CPU a fresh Node process spends in its first seconds of applying
// small changes (8 replicas, one change every 20 ms), per 200-ms window:
// V8 optimises automerge's WebAssembly on other threads once it is hot.
// Run: node bench/warm-up.mjs (R sets the replicas).
import * as A from "@automerge/automerge";
// 8 replicas receive one small change (a mark + a digit splice) every 20 ms; CPU per 200 ms window.
let base = A.from({ m: {}, t: "" }, { actor: "aa".repeat(16) });
base = A.change(base, d => { A.splice(d, ["t"], 0, 0, "seq:0\n"); for (let o = 0; o < 10; o++) for (let c = 0; c < 5; c++) d.m[`o${o}/c${c}`] = null; });
const bb = A.save(base);
let w = A.load(bb, { actor: "bb".repeat(16) });
const reps = Array.from({ length: Number(process.env.R || 8) }, () => A.load(bb));
let i = 0; const out = [];
let last = process.cpuUsage(), lastT = performance.now();
const tick = setInterval(() => {
  i++;
  const h = A.getHeads(w);
  w = A.change(w, d => { d.m[`o${i % 10}/c${i % 5}`] = new A.ImmutableString("yes"); const p = d.t.indexOf("\n"); A.splice(d, ["t"], 4, p - 4, String(i)); });
  const c = A.getChangesSince(w, h)[0];
  for (let k = 0; k < reps.length; k++) reps[k] = A.loadIncremental(reps[k], c);
  if (i % 10 === 0) { const u = process.cpuUsage(last); const t = performance.now(); out.push(Math.round((u.user + u.system) / 1000 / (t - lastT) * 100)); last = process.cpuUsage(); lastT = t; }
  if (i === 300) { clearInterval(tick); console.log("CPU % per 200 ms:", out.join(" ")); }
}, 20);
