// The page's glue around the client package: one IndexedDB storage for
// every document's drafts, how a click runs a request (the client shows
// the outcome as the decision's note), and the host's routes that start
// research and investigations (POST api/research, api/investigations).

import { IndexedDBStorage, READER, RefusedError } from "@accord-crdt/client";

/** Where every client of this page keeps its drafts: they outlive the tab. */
export const drafts = new IndexedDBStorage({ name: "accord-example-drafts" });

/**
 * Whether a request succeeded; a refusal is already the decision's note.
 * @param {Promise<any>} p
 * @returns {Promise<boolean>}
 */
export function settled(p) {
  return p.then(
    () => true,
    (e) => {
      if (!(e instanceof RefusedError)) console.error(e);
      return false;
    },
  );
}

/**
 * Runs a local edit; a refused one (a reader's, a settled decision's)
 * changes nothing and its note says why.
 * @param {() => void} fn
 */
export function edit(fn) {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof RefusedError)) throw e;
  }
}

/**
 * Starts research or an investigation through the host's route, then
 * attaches it to the decision. Returns an error sentence, or "".
 * @param {import("@accord-crdt/client").Client} c
 * @param {string} id the decision
 * @param {"research"|"spike"} kind
 * @param {string} focus
 */
export async function startWork(c, id, kind, focus) {
  const d = c.decisions.get(id) || /** @type {any} */ ({});
  if (!c.write) {
    d.note = { text: READER, tone: "error", at: Date.now() };
    c.notify();
    return d.note.text;
  }
  d.busy = "starting";
  c.notify();
  let ref = "";
  try {
    const route = kind === "spike" ? "api/investigations" : "api/research";
    const r = await fetch(route, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ doc: c.doc, decision: id, focus }),
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok || typeof body.id !== "string") throw new Error(body.error || `HTTP ${r.status}`);
    ref = body.id;
  } catch (e) {
    d.busy = "";
    const what = kind === "spike" ? "The investigation" : "Research";
    const msg = e instanceof Error ? e.message : String(e);
    d.note = { text: `${what} could not start: ${msg}.`, tone: "error", at: Date.now() };
    c.notify();
    return d.note.text;
  }
  if (await settled(c.explore(id, kind === "spike" ? { investigation: ref, focus } : { request: ref, focus }))) return "";
  return d.note?.text || "Refused.";
}
