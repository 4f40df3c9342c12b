// Presence (docs/PROTOCOL.md, "question:presence"): which decision and
// field each connection of the document is in, and whether it is editing.
// It is ephemeral: the server relays it and forgets it, never storing it.
// The client publishes its own state paced to the server's rate (the
// latest state at most every PRESENCE_INTERVAL ms, states set meanwhile
// folding into it, the standing state again every PRESENCE_REFRESH ms so
// the server does not report it silent), and keeps the others' latest
// states, as the Go client does (sync/replica, presence.go).

import { RefusedError } from "./errors.js";

/**
 * What a connection says about itself. Every field is optional; an empty
 * state says the member is in no decision.
 * @typedef {object} PresenceState
 * @property {string} [decision] the decision the member is in (at most 64 bytes)
 * @property {string} [question] the question (at most 64 bytes)
 * @property {string} [field] a mark cell's key ("option/criterion"), "choice" or "text" (at most 200 bytes)
 * @property {[number, number]} [selection] a written answer's selection as [anchor, head], in characters, each 0 to 400,000
 * @property {boolean} [editing] the member is editing
 */

/**
 * Another connection's presence, as last heard.
 * @typedef {object} Peer
 * @property {string} conn the connection's id within the document (a member may have several)
 * @property {string} member the connection's login, as the server authorized it
 * @property {PresenceState} state its latest state
 */

/** The least time between two presence frames (ms): the server's default rate, 10 a second. */
export const PRESENCE_INTERVAL = 100;

/** How often a standing state is published again (ms): the server reports a connection silent after 30 s. */
export const PRESENCE_REFRESH = 20000;

const LIMITS = /** @type {const} */ ([["decision", 64], ["question", 64], ["field", 200]]);
const MAX_SELECTION = 400000;
const utf8 = new TextEncoder();

/**
 * Checks a state against the bounds the server enforces and returns the
 * frame's state (its known fields, empty ones left out). Throws a
 * RefusedError with reason invalid, as the server would refuse it.
 * @param {PresenceState} st
 * @returns {PresenceState}
 */
export function presenceState(st) {
  const bad = (/** @type {string} */ why) => new RefusedError("invalid", `presence: ${why}`, { kind: "question:presence" });
  if (!st || typeof st !== "object") throw bad("a state is an object");
  /** @type {Record<string, any>} */
  const out = {};
  for (const [k, max] of LIMITS) {
    const v = st[k];
    if (v === undefined || v === "") continue;
    if (typeof v !== "string") throw bad(`${k} is a string`);
    const n = utf8.encode(v).length;
    if (n > max) throw bad(`${k} of ${n} bytes, at most ${max}`);
    out[k] = v;
  }
  const sel = /** @type {unknown} */ (st.selection);
  if (sel !== undefined) {
    if (!Array.isArray(sel) || (sel.length !== 0 && sel.length !== 2)) throw bad("a selection is [anchor, head]");
    for (const x of sel) if (!Number.isInteger(x) || x < 0 || x > MAX_SELECTION) throw bad(`selection ${x} is outside 0 to ${MAX_SELECTION}`);
    if (sel.length) out.selection = [sel[0], sel[1]];
  }
  if (st.editing !== undefined && typeof st.editing !== "boolean") throw bad("editing is true or false");
  if (st.editing) out.editing = true;
  return out;
}

/** The state this client publishes, paced. */
export class PresenceOut {
  /** @param {(frame: any) => boolean} send sends a frame now, false when there is no connection */
  constructor(send) {
    this.send = send;
    /** @type {PresenceState|null} the latest state set; null: none */
    this.state = null;
    /** whether the latest state has not gone out on this connection */
    this.due = false;
    this.sent = -Infinity;
    /** @type {any} */
    this.timer = null;
  }

  /** @param {PresenceState} state */
  set(state) {
    this.state = state;
    this.due = true;
    this.push();
  }

  /** A new connection: the standing state is due on it. */
  resume() {
    this.due = this.state !== null;
    this.push();
  }

  /** Sends the latest state when due and the interval allows, else arms a timer for when it will. */
  push() {
    clearTimeout(this.timer);
    this.timer = null;
    if (!this.state) return;
    const wait = (this.due ? PRESENCE_INTERVAL : PRESENCE_REFRESH) - (now() - this.sent);
    if (wait > 0) {
      this.timer = setTimeout(() => this.push(), wait);
      return;
    }
    if (!this.send({ kind: "question:presence", state: this.state })) return; // due again on the next connection
    this.due = false;
    this.sent = now();
    this.timer = setTimeout(() => this.push(), PRESENCE_REFRESH);
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
  }
}

/** The other connections' presence, as last heard. */
export class Peers {
  constructor() {
    /** this connection's own id, named by the server's `you` frame */
    this.self = "";
    /** @type {Map<string, Peer>} */
    this.all = new Map();
    /** bumped on every change; a view is reused until it changes */
    this.version = 0;
    /** @type {Map<string, {version: number, peers: ReadonlyMap<string, Peer>}>} */
    this.views = new Map();
  }

  /**
   * Takes a presence frame: this connection's own id, or a batch of
   * entries (one per connection). Reports whether the others changed.
   * @param {any} m
   */
  take(m) {
    if (m.you) {
      this.self = String(m.conn || "");
      return false;
    }
    let changed = false;
    for (const e of Array.isArray(m.all) ? m.all : [m]) {
      if (!e || typeof e.conn !== "string" || !e.conn || e.conn === this.self) continue;
      if (e.left || e.silent || !e.state || typeof e.state !== "object") {
        changed = this.all.delete(e.conn) || changed;
      } else {
        this.all.set(e.conn, Object.freeze({ conn: e.conn, member: String(e.member || ""), state: Object.freeze(e.state) }));
        changed = true;
      }
    }
    if (changed) this.version++;
    return changed;
  }

  /** The connection is gone: so are its id and everyone's states. Reports whether there were any. */
  clear() {
    this.self = "";
    if (this.all.size === 0) return false;
    this.all.clear();
    this.version++;
    return true;
  }

  /**
   * The others in decision id (every other connection when id is
   * undefined), by connection id; the same map until it changes.
   * @param {string} [id]
   * @returns {ReadonlyMap<string, Peer>}
   */
  view(id) {
    const key = id === undefined ? "\u0000" : id;
    const held = this.views.get(key);
    if (held && held.version === this.version) return held.peers;
    /** @type {Map<string, Peer>} */
    const peers = new Map();
    for (const [conn, p] of this.all) if (id === undefined || p.state.decision === id) peers.set(conn, p);
    const same = !!held && held.peers.size === peers.size && [...peers].every(([conn, p]) => held.peers.get(conn) === p);
    const out = same && held ? held.peers : peers;
    this.views.set(key, { version: this.version, peers: out });
    return out;
  }
}

/** A monotonic clock in milliseconds. */
export function now() {
  return globalThis.performance ? performance.now() : Date.now();
}
