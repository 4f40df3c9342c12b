// A client's connection to its server: the WebSocket it dials (asking
// for refusals as close codes, docs/PROTOCOL.md, "Refusals as close
// codes"), its hello, the frames it decodes in arrival order, and the
// redials after the connection is lost. Redials wait the Go client's
// jittered exponential backoff (sync/replica), restarted after a
// connection that stayed up a while or that the server closed with 1012
// or 1013 (reconnectDelay, restartsBackoff); a refused handshake's
// Retry-After lengthens the wait where it can be read. A refusal ends the
// redials until start().
//
// The functions taking a Client are the bodies of its methods of the same
// name. They reach the members the class keeps private (ws, pending,
// arriving, incoming, receive, deliver, handle, failPending, request) as
// c["name"], which the type checker allows outside the class.

import { Decoder } from "@msgpack/msgpack";
import * as R from "./replica.js";
import { RefusedError } from "./errors.js";
import { refusalText } from "./messages.js";
import { now } from "./presence.js";

/** @typedef {import("./client.js").Client} Client */

/** Decodes every frame: one decoder, not one a frame (bench/receive.mjs). */
const frames = new Decoder();

/**
 * Connects (and redials whenever the connection is lost). With a
 * storage, the stored drafts are restored first.
 * @param {Client} c
 */
export function start(c) {
  c.stopped = false;
  c.refused = null;
  c.attempts = 0;
  if (!c.storage || c.restored) {
    c.connect();
    return;
  }
  c.restore().then(() => {
    if (!c.stopped && !c["ws"]) c.connect();
  });
}

/**
 * Closes the connection for good (switching member, leaving).
 * @param {Client} c
 */
export function stop(c) {
  c.stopped = true;
  clearTimeout(c.timer);
  if (c.storage && c.restored) c.flushStorage(); // what was edited last is kept too
  clearTimeout(c.applyTimer);
  c.presenceOut.stop();
  if (c.peers.clear()) c.presenceChanged();
  const ws = c["ws"];
  c["ws"] = null;
  if (ws) ws.close(1000, "bye");
  c["failPending"]("disconnected");
  // Accepted, but their changes will not come: the caller learns the
  // outcome now rather than at the timeout.
  for (const a of c["arriving"].values()) {
    clearTimeout(a.p.timer);
    a.p.resolve(a.reply);
  }
  c["arriving"].clear();
  c.conn = "closed";
  c.notify();
}

/**
 * Dials, and handles the socket's frames and its end (see lost). The
 * hello names, per decision, the last heads the server accepted.
 * @param {Client} c
 */
export function connect(c) {
  if (c.stopped) return;
  if (!c.Socket) throw new Error("no WebSocket here: pass Options.WebSocket (in Node 20, the ws package)");
  // refuse=close: a refusal comes as a close code the browser shows
  // (docs/PROTOCOL.md, "Refusals as close codes"), not a hidden status.
  const url = c.url + (c.url.includes("?") ? "&" : "?") + "refuse=close";
  const ws = c.token ? new c.Socket(url, { headers: { Authorization: `Bearer ${c.token}` } }) : new c.Socket(url);
  ws.binaryType = "arraybuffer";
  c["ws"] = ws;
  if (c.conn !== "unreachable") c.conn = c.attempts === 0 && !c.welcomedOnce ? "connecting" : "reconnecting";
  c.notify();
  let opened = false;
  ws.onopen = () => {
    if (ws !== c["ws"]) return;
    opened = true;
    /** @type {Record<string, string[]>} */
    const have = {};
    for (const d of c.decisions.values()) if (d.core && d.accepted.length) have[d.id] = d.accepted;
    c.send({ kind: "hello", v: 1, have, deflate: INFLATES });
  };
  ws.onmessage = (ev) => {
    if (ws !== c["ws"]) return;
    let m;
    try {
      m = typeof ev.data === "string" ? JSON.parse(ev.data) : frames.decode(new Uint8Array(ev.data));
    } catch (e) {
      console.warn("undecodable frame", e);
      return;
    }
    c["receive"](ws, m);
  };
  // An error is followed by close, which redials; without a handler
  // Node's ws throws it.
  ws.onerror = () => {};
  // Node's ws shows the response of a refused handshake (a browser's
  // WebSocket does not): its Retry-After is the least wait before the
  // next attempt, as for the Go client.
  let retryAfter = 0;
  if (typeof ws.on === "function") {
    ws.on("unexpected-response", (/** @type {any} */ _req, /** @type {any} */ res) => {
      retryAfter = retryAfterMs(res.headers["retry-after"]);
      ws.terminate();
    });
  }
  ws.onclose = (ev) => {
    if (ws !== c["ws"]) return;
    c["ws"] = null;
    const why = REFUSED[ev.code];
    if (why) c.refused = new RefusedError(why, ev.reason);
    c.lost(ev.code, retryAfter, !opened);
  };
}

/**
 * Handles a decoded frame of ws in arrival order. A compressed document
 * (question:doc with deflated) inflates asynchronously; the frames after
 * it wait until it is handled.
 * @param {Client} c
 * @param {WebSocket} ws
 * @param {any} m
 */
export function receive(c, ws, m) {
  if (c.waiting) {
    c.waiting.push(m);
    return;
  }
  if (!(m && m.kind === "question:doc" && m.deflated === true && m.doc instanceof Uint8Array)) {
    c["deliver"](m);
    return;
  }
  c.waiting = [];
  inflate(m.doc, MAX_DOC_BYTES).then(
    (doc) => {
      if (ws !== c["ws"]) return;
      const rest = c.waiting || [];
      c.waiting = null;
      c["deliver"]({ ...m, doc, deflated: false });
      for (const x of rest) {
        if (ws !== c["ws"]) return;
        c["receive"](ws, x);
      }
    },
    (e) => {
      if (ws !== c["ws"]) return;
      console.warn("undecodable compressed document", e);
      c.waiting = null;
      ws.close(1000, "undecodable frame"); // the reconnect catches up again
    },
  );
}

/**
 * Handles a frame: presence goes to the peers, any other frame to
 * handle, and the listeners hear of it.
 * @param {Client} c
 * @param {any} m
 */
export function deliver(c, m) {
  // Presence changes no decision: it has listeners of its own.
  if (m && m.kind === "question:presence") {
    if (c.peers.take(m)) c.presenceChanged();
    return;
  }
  try {
    c["handle"](m);
  } catch (e) {
    console.error("frame", m && m.kind, e);
  }
  c.notify();
}

/**
 * The connection is gone: fail an ask that waits for its reply (the
 * others are sent again on the next connection) and redial after the
 * backoff, restarted first when the connection stayed up long enough or
 * the server closed it with 1012 or 1013 (restartsBackoff); a refused
 * handshake's Retry-After (ms) lengthens the wait, up to maxBackoff.
 * A refusal (refused) fails every request and ends the redials; a dial
 * that failed before the socket opened makes conn unreachable.
 * @param {Client} c
 * @param {number} code the close code (0 when the client ended it)
 * @param {number} retryAfter
 * @param {boolean} unopened the socket never opened
 */
export function lost(c, code, retryAfter, unopened) {
  const served = c.welcomed ? now() - c.welcomedAt : -1;
  c.waiting = null;
  c.welcomed = false;
  if (c.peers.clear()) c.presenceChanged();
  c["incoming"].clear();
  c.incomingQueued = false;
  clearTimeout(c.applyTimer);
  c["failPending"]("disconnected", true);
  for (const d of c.decisions.values()) {
    d.inflight = "";
    d.sent = [];
    d.synced = false;
  }
  if (c.stopped) return;
  const r = c.refused;
  if (r) {
    c["failPending"](r.reason);
    c.conn = "refused";
    c.note = { text: refusalText("connect", r.reason, r.detail), tone: "error", at: Date.now() };
    c.notify();
    return;
  }
  c.conn = unopened ? "unreachable" : "reconnecting";
  if (unopened) c.note = { text: refusalText("connect", "unreachable"), tone: "error", at: Date.now() };
  if (restartsBackoff(served, code, c)) c.attempts = 0;
  const delay = Math.max(reconnectDelay(c.attempts, c), Math.min(retryAfter, c.maxBackoff));
  c.attempts++;
  clearTimeout(c.timer);
  c.timer = setTimeout(() => c.connect(), delay);
  c.notify();
}

/**
 * Ends the connection so the reconnect's hello catches the replicas up.
 * @param {Client} c
 */
export function resync(c) {
  const ws = c["ws"];
  if (!ws) return;
  c["ws"] = null;
  ws.close(4000, "resync");
  c.lost();
}

/**
 * Sends an encoded frame when the connection is open; false when it is
 * not.
 * @param {Client} c
 * @param {Uint8Array} frame
 */
export function send(c, frame) {
  if (!c["ws"] || c["ws"].readyState !== OPEN) return false;
  c["ws"].send(frame);
  return true;
}

/**
 * The sync socket's URL for doc on the page's own server (its /sync
 * route, relative to the page), for browsers. The server takes the member
 * from the session cookie the browser sends with the upgrade.
 * @param {string} doc
 * @param {string} [base] the page's address (default location.href)
 */
export function syncURL(doc, base) {
  const u = new URL("sync", base || globalThis.location?.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.search = new URLSearchParams({ doc }).toString();
  return u.toString();
}

/** WebSocket's readyState when open. */
const OPEN = 1;

/** The redial backoff's bounds by default (ms), the Go client's. */
export const MIN_BACKOFF = 50;
export const MAX_BACKOFF = 5000;

/**
 * How long, in minBackoffs (and at most maxBackoff), a connection must stay
 * up after its welcome for its loss to restart the backoff: a server that
 * accepts and drops is redialled at most about twice a second.
 */
const STABLE_CONNECTIONS = 10;

/**
 * The wait (ms) before redial attempt n (from 0, counted since the
 * backoff last restarted): between half and all of minBackoff·2ⁿ, capped
 * at maxBackoff, uniformly, as the Go client waits (sync/replica). The
 * jitter spreads the redials of the many clients a server restart drops
 * at once.
 * @param {number} attempt
 * @param {{minBackoff: number, maxBackoff: number}} opts
 * @param {() => number} [random] uniform in [0, 1)
 * @returns {number}
 */
export function reconnectDelay(attempt, { minBackoff, maxBackoff }, random = Math.random) {
  const d = Math.min(maxBackoff, minBackoff * 2 ** attempt);
  return d / 2 + (d / 2) * random();
}

/**
 * Whether a lost connection restarts the backoff from attempt 0, as the Go
 * client decides it. One that stayed up STABLE_CONNECTIONS minBackoffs
 * (at most maxBackoff) after its welcome ends the run of failed attempts
 * before it: its server went away, and waiting out a grown backoff would
 * only add to the outage. One the server closed with 1012 (the document
 * moved, or its host restarts) or 1013 (a commit failed, try again) is
 * served again at once, whatever came before. One that ended sooner, or
 * before its welcome, keeps the backoff growing, against a server that
 * accepts and drops.
 * @param {number} served ms since the connection's welcome; negative when it had none
 * @param {number} code its close code
 * @param {{minBackoff: number, maxBackoff: number}} opts
 * @returns {boolean}
 */
export function restartsBackoff(served, code, { minBackoff, maxBackoff }) {
  if (served < 0) return false;
  return served >= Math.min(maxBackoff, STABLE_CONNECTIONS * minBackoff) || code === 1012 || code === 1013;
}

/**
 * The wait (ms) a Retry-After header asks for, in seconds or as an HTTP
 * date (from at); 0 when it is absent or unreadable.
 * @param {string|undefined} v
 * @param {number} [at] ms since the epoch
 * @returns {number}
 */
export function retryAfterMs(v, at = Date.now()) {
  if (!v) return 0;
  if (/^\s*\d+\s*$/.test(v)) return Math.min(Number(v), 24 * 3600) * 1000;
  const t = Date.parse(v);
  return t > at ? t - at : 0;
}

/**
 * The close codes of a refused connection (docs/PROTOCOL.md, "Refusals as
 * close codes"), as RefusedError reasons: none changes by redialling.
 * @type {Record<number, import("./errors.js").Reason>}
 */
const REFUSED = { 4401: "unauthorized", 4403: "forbidden", 4404: "not_found", 4426: "version" };

/** Whether this runtime inflates raw DEFLATE (the hello then asks for compressed documents). */
const INFLATES = typeof DecompressionStream === "function";

/** The largest document the client inflates: what the server loads (crdt.MaxDocumentBytes). */
const MAX_DOC_BYTES = 64 << 20;

/**
 * Inflates a raw DEFLATE stream, refusing one that inflates past max bytes.
 * @param {Uint8Array} bytes
 * @param {number} max
 * @returns {Promise<Uint8Array>}
 */
async function inflate(bytes, max) {
  const reader = new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (bytes)]).stream().pipeThrough(new DecompressionStream("deflate-raw")).getReader();
  /** @type {Uint8Array[]} */
  const parts = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > max) {
      await reader.cancel();
      throw new Error(`a compressed document inflates past ${max} bytes`);
    }
    parts.push(value);
  }
  return R.concat(parts);
}
