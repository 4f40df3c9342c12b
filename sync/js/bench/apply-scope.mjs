// How the cost of applying one change depends on the history of the object
// it touches (automerge 3.5, the raw handle, no patches): a mark beside a
// long text, an insertion into a short text, and an edit of the long one.
// Run: node bench/apply-scope.mjs (H sets the long text's history).
import * as A from "@automerge/automerge";
const H = Number(process.env.H || 4000), N = 300;
let base = A.from({ m: {}, t: "", u: "" }, { actor: "aa".repeat(16) });
base = A.change(base, d => { A.splice(d, ["t"], 0, 0, "seq:0\n"); });
for (let i = 1; i <= H; i++) base = A.change(base, d => { const p = d.t.indexOf("\n"); A.splice(d, ["t"], 4, p - 4, String(i)); });
const bb = A.save(base);
function changes(f) {
  let w = A.load(bb, { actor: "bb".repeat(16) }); const out = [];
  for (let i = 1; i <= N; i++) { const h = A.getHeads(w); w = A.change(w, f(i)); out.push(A.getChangesSince(w, h)[0]); }
  return out;
}
const marks = changes(i => d => { d.m[`o${i%10}/c${i%5}`] = new A.ImmutableString("yes" + (i%3)); });
const other = changes(i => d => { A.splice(d, ["u"], 0, 0, "x"); });
const same = changes(i => d => { A.splice(d, ["t"], 0, 0, "x"); });
for (const [label, cs] of [["marks (other object)", marks], ["text u (other object)", other], ["text t (the long one)", same], ["marks again", marks]]) {
  const h = A.getBackend(A.load(bb));
  const t0 = performance.now();
  for (const c of cs) h.loadIncremental(c);
  console.log(`H=${H} ${label}: ${((performance.now() - t0) * 1000 / N).toFixed(0)} µs/change`);
}
