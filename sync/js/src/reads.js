// Reading a client's decisions: each one's state as plain values, read
// from its replica and its record, and the waits for a condition (ready,
// open, until). state(id) returns the same object until something
// changes, so it suits React's useSyncExternalStore, Preact's hooks, or
// any store.
//
// The functions taking a Client are the bodies of its methods of the same
// name.

import * as R from "./replica.js";
import { RefusedError } from "./errors.js";
import { headsOf } from "./records.js";

/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 * @typedef {import("./client.js").DecisionState} DecisionState
 */


/**
 * The current draft of a decision, read from its replica (cached by
 * heads): {generation, questions: {qid: {text, choices, marks}}}.
 * @param {Client} c
 * @param {Decision} d
 */
export function draft(c, d) {
  if (!d.core) return null;
  const key = headsOf(d).join();
  if (d.viewKey !== key) {
    const st = R.readState(d.doc);
    d.view = { generation: st.generation, questions: st.drafts[String(st.generation)] || {}, shapes: st.questions };
    d.viewKey = key;
  }
  return d.view;
}

/**
 * A decision's state as plain values: its record, its current draft,
 * whether this member edited it, whether edits are unsent. The same
 * object is returned until something changes (so it suits React's
 * useSyncExternalStore, Preact's hooks, or any store); null for an
 * unknown decision.
 * @param {Client} c
 * @param {string} id
 * @returns {DecisionState|null}
 */
export function state(c, id) {
  const d = c.decisions.get(id);
  if (!d) return null;
  const held = c.states.get(id);
  if (held && held.version === c.version) return held.state;
  const view = c.draft(d);
  /** @type {DecisionState} */
  const state = {
    id, record: d.record, status: d.record.status, generation: view ? view.generation : 0, questions: view ? view.questions : {},
    ready: !!d.core, synced: d.synced, edited: d.edited, unsent: c.unsent(d), note: d.note, busy: d.busy,
  };
  const prev = held?.state;
  const same = prev && Object.keys(state).every((k) => /** @type {any} */ (prev)[k] === /** @type {any} */ (state)[k]);
  c.states.set(id, { version: c.version, state: same && prev ? prev : state });
  return same && prev ? prev : state;
}

/**
 * Calls fn with a decision's state now and after every change to it.
 * Returns the unsubscribe function.
 * @param {Client} c
 * @param {string} id
 * @param {(state: DecisionState|null) => void} fn
 * @returns {() => void}
 */
export function watch(c, id, fn) {
  let last = c.state(id);
  fn(last);
  return c.subscribe(() => {
    const next = c.state(id);
    if (next !== last) fn((last = next));
  });
}

/**
 * Resolves when pred() holds, checked after every change; rejects with
 * a RefusedError (reason timeout) after ms.
 * @param {Client} c
 * @param {() => boolean} pred
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<void>}
 */
export function until(c, pred, ms, what) {
  return new Promise((resolve, reject) => {
    // pred may throw: the wait rejects with what it threw.
    const done = () => {
      try {
        if (!pred()) return false;
        resolve();
      } catch (e) {
        reject(e);
      }
      return true;
    };
    if (done()) return;
    const off = c.subscribe(() => {
      if (!done()) return;
      clearTimeout(timer);
      off();
    });
    const timer = setTimeout(() => {
      off();
      reject(new RefusedError("timeout", `${what} took longer than ${ms} ms`));
    }, ms);
  });
}

/**
 * Resolves once the server has welcomed this client and every decision
 * it named has its document applied: edits made right after build on
 * the server's accepted drafts. Rejects at once with the RefusedError
 * of a refused connection (refused); with unreachable, also as soon as
 * a dial fails before its socket opens (the redials go on).
 * @param {Client} c
 * @param {number} ms
 * @param {boolean} unreachable reject with unreachable too
 */
export function ready(c, ms, unreachable) {
  return c.until(() => {
    if (c.refused) throw c.refused;
    if (unreachable && c.conn === "unreachable") throw new RefusedError("unreachable", c.note?.text);
    return c.welcomed && c.order.every((id) => {
      const d = c.decisions.get(id);
      return !!d && !!d.core && d.synced;
    });
  }, ms, "connecting");
}

/**
 * Resolves with a decision's state once its replica is here (restored
 * from storage or sent by the server), so it can be edited at once.
 * @param {Client} c
 * @param {string} id
 * @param {number} ms
 * @returns {Promise<DecisionState>}
 */
export async function open(c, id, ms) {
  if (c.restoring) await c.restoring;
  await c.until(() => !!c.decisions.get(id)?.core || (c.welcomed && !c.decisions.has(id)), ms, `opening ${id}`);
  const d = c.decisions.get(id);
  if (!d || !d.doc) throw new RefusedError("not_found", "this document has no such decision", { id });
  return /** @type {DecisionState} */ (c.state(id));
}
