// The replica's document code alone, without a server.

import assert from "node:assert/strict";
import { test } from "node:test";
import { respliced } from "../src/replica.js";

/** theirs with the splice r applied (UTF-16 positions). */
function apply(theirs, r) {
  return r ? theirs.slice(0, r.pos) + r.ins + theirs.slice(r.pos + r.del) : theirs;
}

test("a carried written answer keeps every change of theirs that is not where mine is", () => {
  for (const [base, mine, theirs, want] of [
    ["abc", "aXc", "abc", "aXc"],
    ["abc", "abc", "aYc", "aYc"],
    // one line per writer, as several members writing one answer
    ["1:1\n2:1\n3:1\n", "1:1\n2:2\n3:1\n", "1:5\n2:1\n3:7\n", "1:5\n2:2\n3:7\n"],
    ["hello world", "hello brave world", "HELLO world", "HELLO brave world"],
    ["hello world", "hello world!", "hello there world", "hello there world!"],
    ["abc", "abXc", "abYc", "abYXc"], // two insertions at one point: mine after theirs
    ["abcdef", "aXf", "abcYef", "aXf"], // the same span: mine wins there
    ["abcdef", "abXef", "Zabcdef!", "ZabXef!"],
    ["a😀b", "a😀Xb", "Za😀b", "Za😀Xb"], // positions count UTF-16 units
    ["😀😀😀", "😀X😀", "😀😀😀Y", "😀X😀Y"],
  ]) {
    assert.equal(apply(theirs, respliced(base, mine, theirs)), want, JSON.stringify({ base, mine, theirs }));
  }
});

test("changes in places apart merge as if made one after the other (random texts)", () => {
  let seed = 7;
  const rand = (n) => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let z = Math.imul(seed ^ (seed >>> 15), seed | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) % n;
  };
  const letters = Array.from("abcdefghijklmnopqrstuvwxyzé😀\n ");
  const word = (n) => Array.from({ length: n }, () => letters[rand(letters.length)]).join("");
  for (let i = 0; i < 500; i++) {
    const cs = Array.from(word(20 + rand(200)));
    // mine changes one span; theirs changes up to five spans, all at least
    // one character away from mine's
    const mp = rand(cs.length - 4) + 2;
    const md = rand(Math.min(3, cs.length - mp - 2));
    const spans = [];
    for (let k = 0; k < 1 + rand(5); k++) {
      const at = rand(cs.length);
      const del = rand(3);
      if (at + del >= mp - 1 && at <= mp + md + 1) continue;
      if (at + del > cs.length || spans.some((s) => at <= s.at + s.del + 1 && s.at <= at + del + 1)) continue;
      spans.push({ at, del, ins: word(rand(4)) });
    }
    spans.sort((x, y) => y.at - x.at);
    const base = cs.join("");
    const mineIns = word(rand(4));
    const mine = [...cs.slice(0, mp), ...Array.from(mineIns), ...cs.slice(mp + md)].join("");
    let theirs = [...cs];
    let both = [...cs];
    const all = [...spans, { at: mp, del: md, ins: mineIns }].sort((x, y) => y.at - x.at);
    for (const s of spans) theirs.splice(s.at, s.del, ...Array.from(s.ins));
    for (const s of all) both.splice(s.at, s.del, ...Array.from(s.ins));
    theirs = theirs.join("");
    if (mine === base) continue;
    assert.equal(apply(theirs, respliced(base, mine, theirs)), both.join(""), JSON.stringify({ base, mine, theirs }));
  }
});
