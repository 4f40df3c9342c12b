// The redial policy: the backoff's rule (the Go client's), and clients
// against the real Go server (test/server) restarted under them or
// closing their document with 1012 and 1013.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import WebSocket from "ws";
import { Client } from "../src/index.js";
import { reconnectDelay, restartsBackoff, retryAfterMs } from "../src/client.js";
import { DEFINITION, TestServer, docName, eventually } from "./helpers.mjs";

const DEFAULTS = { minBackoff: 50, maxBackoff: 5000 };

test("the redial wait is between half and all of minBackoff·2ⁿ, capped at maxBackoff", () => {
  const below1 = () => 1 - Number.EPSILON;
  for (let n = 0; n < 12; n++) {
    const d = Math.min(5000, 50 * 2 ** n);
    assert.equal(reconnectDelay(n, DEFAULTS, () => 0), d / 2, `attempt ${n}'s shortest wait`);
    const longest = reconnectDelay(n, DEFAULTS, below1);
    assert.ok(longest <= d && longest > d - 1e-6, `attempt ${n}'s longest wait ${longest}, want ${d}`);
  }
  // It doubles with each attempt until the cap, then stays there.
  assert.deepEqual([0, 1, 2, 3, 6, 7].map((n) => reconnectDelay(n, DEFAULTS, () => 0)), [25, 50, 100, 200, 1600, 2500]);
  for (const n of [7, 8, 30, 64, 1000, 1e9]) {
    assert.equal(reconnectDelay(n, DEFAULTS, () => 0), 2500);
    assert.ok(reconnectDelay(n, DEFAULTS, below1) <= 5000);
  }
  // Other bounds.
  assert.equal(reconnectDelay(0, { minBackoff: 400, maxBackoff: 1000 }, () => 0.5), 300);
  assert.equal(reconnectDelay(5, { minBackoff: 400, maxBackoff: 1000 }, () => 0.5), 750);
});

test("the redial wait is spread evenly over its jitter range", () => {
  const n = 20000;
  const bins = new Array(10).fill(0);
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const d = reconnectDelay(3, DEFAULTS); // 200 to 400 ms
    assert.ok(d >= 200 && d <= 400, `${d} out of [200, 400]`);
    lo = Math.min(lo, d);
    hi = Math.max(hi, d);
    bins[Math.min(9, Math.floor((d - 200) / 20))]++;
  }
  assert.ok(lo < 202 && hi > 398, `the waits span only ${lo} to ${hi}`);
  for (const b of bins) assert.ok(b > n / 10 * 0.85 && b < n / 10 * 1.15, `uneven: ${bins}`);
});

test("the backoff restarts after a connection that stayed up, or that the server closed with 1012 or 1013", () => {
  // Stable after ten minBackoffs (500 ms by default), at most maxBackoff.
  assert.equal(restartsBackoff(499, 1006, DEFAULTS), false);
  assert.equal(restartsBackoff(500, 1006, DEFAULTS), true);
  assert.equal(restartsBackoff(500, 1000, DEFAULTS), true);
  assert.equal(restartsBackoff(2999, 1006, { minBackoff: 1000, maxBackoff: 3000 }), false);
  assert.equal(restartsBackoff(3000, 1006, { minBackoff: 1000, maxBackoff: 3000 }), true);
  // The document moved or its commit failed: at once.
  assert.equal(restartsBackoff(0, 1012, DEFAULTS), true);
  assert.equal(restartsBackoff(0, 1013, DEFAULTS), true);
  assert.equal(restartsBackoff(10, 1011, DEFAULTS), false);
  // A connection that never got its welcome keeps the backoff growing.
  assert.equal(restartsBackoff(-1, 1012, DEFAULTS), false);
  assert.equal(restartsBackoff(-1, 1006, DEFAULTS), false);
});

test("Retry-After is read in seconds or as an HTTP date", () => {
  const at = Date.parse("2030-01-01T00:00:00Z");
  assert.equal(retryAfterMs(undefined), 0);
  assert.equal(retryAfterMs(""), 0);
  assert.equal(retryAfterMs("2"), 2000);
  assert.equal(retryAfterMs("0"), 0);
  assert.equal(retryAfterMs("999999"), 24 * 3600 * 1000);
  assert.equal(retryAfterMs("Tue, 01 Jan 2030 00:00:03 GMT", at), 3000);
  assert.equal(retryAfterMs("Mon, 31 Dec 2029 23:59:00 GMT", at), 0);
  assert.equal(retryAfterMs("soon", at), 0);
});

test("minBackoff and maxBackoff default to the Go client's", () => {
  const c = (/** @type {any} */ o) => new Client({ doc: "d", url: "ws://127.0.0.1:1/sync", WebSocket: class {}, ...o });
  assert.deepEqual([c({}).minBackoff, c({}).maxBackoff], [50, 5000]);
  assert.deepEqual([c({ minBackoff: 200, maxBackoff: 800 }).minBackoff, c({ minBackoff: 200, maxBackoff: 800 }).maxBackoff], [200, 800]);
  assert.deepEqual([c({ minBackoff: -1, maxBackoff: 0 }).minBackoff, c({ minBackoff: -1, maxBackoff: 0 }).maxBackoff], [50, 5000]);
  assert.equal(c({ minBackoff: 800, maxBackoff: 200 }).maxBackoff, 800, "maxBackoff is at least minBackoff");
});

/** @typedef {{dials: number[], closes: {at: number, code: number}[]}} Log */

/**
 * A WebSocket that records when each socket is made (a dial) and when it
 * closes, with its close code, before the client hears of it.
 * @param {Log} log
 */
function recording(log) {
  return class extends WebSocket {
    /** @param {any[]} args */
    constructor(...args) {
      // @ts-ignore
      super(...args);
      log.dials.push(performance.now());
      this.addEventListener("close", (ev) => log.closes.push({ at: performance.now(), code: ev.code }));
    }
  };
}

test("after a server restart, 50 clients redial spread over the backoff's jitter, and all reconnect", async () => {
  const srv = new TestServer();
  await srv.start();
  const doc = docName();
  const members = ["ana", "ben", "rita"]; // at most 32 connections per member
  /** @type {Log[]} */
  const logs = Array.from({ length: 50 }, () => ({ dials: [], closes: [] }));
  /** @type {Client[]} */
  const clients = [];
  try {
    // The first redial comes 3 to 6 s after the loss: a jitter range
    // much wider than the pauses of a loaded machine's event loop, which
    // hold timers back together.
    clients.push(...await Promise.all(logs.map((log, i) =>
      srv.client(doc, members[i % 3], { WebSocket: recording(log), minBackoff: 6000, maxBackoff: 6000 }))));
    await srv.stop();
    await srv.start(); // the same address and data
    await eventually(() => logs.every((l) => l.dials.length >= 2), "every client to redial", 30000);
    await Promise.all(clients.map((c) => c.ready(30000)));

    const waits = logs.map((l) => l.dials[1] - l.closes[0].at).sort((a, b) => a - b);
    const spread = waits[waits.length - 1] - waits[0];
    const seen = `first redials ${waits.map(Math.round).join(" ")} ms after the loss`;
    assert.ok(waits[0] >= 2995, `a redial came before half of minBackoff: ${seen}`);
    assert.ok(spread >= 1500, `the redials span less than half the jitter range (3 s): ${seen}`);
    assert.ok(clients.every((c) => c.conn === "open"));
  } finally {
    for (const c of clients) c.stop();
    await srv.close();
  }
});

/**
 * Makes client's backoff grow: srv goes away until the client has failed
 * to redial `failures` times, then comes back, and the client reconnects.
 * @param {TestServer} srv
 * @param {Client} client
 * @param {Log} log
 * @param {number} failures
 */
async function growBackoff(srv, client, log, failures) {
  const dialled = log.dials.length;
  await srv.stop();
  await eventually(() => log.dials.length >= dialled + failures, `${failures} failed redials`, 30000);
  await srv.start();
  await client.ready(30000);
}

/**
 * Has the server close the client's connection (close, expected to end
 * with code) and returns how long after the close the client redialled,
 * once it is back.
 * @param {Client} client
 * @param {Log} log
 * @param {() => Promise<void>} close
 * @param {number} code
 */
async function redialAfter(client, log, close, code) {
  const closes = log.closes.length;
  const dials = log.dials.length;
  await close();
  await eventually(() => log.closes.length > closes && log.dials.length > dials, "the close and the redial", 30000);
  const c = log.closes[closes];
  assert.equal(c.code, code);
  // Before the connection counted as stable (ten minBackoffs), so that
  // only the close code can have restarted the backoff.
  assert.ok(c.at - client.welcomedAt < 10 * client.minBackoff, `the close came ${Math.round(c.at - client.welcomedAt)} ms after the welcome`);
  await client.ready(30000);
  return log.dials[dials] - c.at;
}

/**
 * POSTs to srv's test endpoints.
 * @param {TestServer} srv
 * @param {string} path
 */
async function post(srv, path) {
  const res = await fetch(`http://${srv.addr}${path}`, { method: "POST" });
  assert.equal(res.status, 200);
}

/**
 * A client whose backoff failures have grown, then a close by the server
 * with code (made by close): the redial comes after the shortest backoff
 * (100 to 200 ms), where another loss would have waited at least 1.6 s
 * (the bound checked, so that a pause of the event loop cannot fail it).
 * @param {number} code
 * @param {(srv: TestServer, doc: string, client: Client, id: string) => Promise<void>} close
 */
async function redialsAtOnce(code, close) {
  const srv = new TestServer();
  await srv.start();
  const doc = docName();
  /** @type {Log} */
  const log = { dials: [], closes: [] };
  // Stable after 2 s; after four failed redials a loss waits 1.6 to 3.2 s.
  const client = await srv.client(doc, "ana", { WebSocket: recording(log), minBackoff: 200, maxBackoff: 60000 });
  try {
    const [rec] = await client.create([{ key: "k", origin: "workflow", definition: DEFINITION }]);
    await growBackoff(srv, client, log, 4);
    assert.ok(client.attempts >= 4, `attempts ${client.attempts}`);
    const wait = await redialAfter(client, log, () => close(srv, doc, client, rec.id), code);
    assert.ok(wait >= 95 && wait < 1590, `redialled ${Math.round(wait)} ms after ${code}, want 100 to 200`);
  } finally {
    client.stop();
    await srv.close();
  }
}

test("a document closed with 1012 (moved) or 1013 (commit failed) is redialled at the shortest backoff, however grown", async () => {
  await Promise.all([
    redialsAtOnce(1012, (srv, doc) => post(srv, `/close?doc=${encodeURIComponent(doc)}`)),
    redialsAtOnce(1013, async (srv, doc, client, id) => {
      await post(srv, `/fail-commit?doc=${encodeURIComponent(doc)}`);
      client.setText(id, "why", "This commit fails.");
    }),
  ]);
});

test("a handshake refused with Retry-After is redialled no sooner than it asks, and at most maxBackoff later", async () => {
  let dials = 0;
  const refuser = createServer();
  refuser.on("upgrade", (req, socket) => {
    dials++;
    // A client stopped while its dial is answered resets the socket; that
    // is the client going away, not a failure of the test.
    socket.on("error", () => {});
    const after = new URL(req.url || "/", "http://x").searchParams.get("after");
    socket.end(`HTTP/1.1 503 Service Unavailable\r\n${after ? `Retry-After: ${after}\r\n` : ""}Content-Length: 0\r\nConnection: close\r\n\r\n`);
  });
  await new Promise((r) => refuser.listen(0, "127.0.0.1", () => r(undefined)));
  const { port } = /** @type {import("node:net").AddressInfo} */ (refuser.address());
  try {
    /**
     * The wait between a client's first two dials with these options.
     * @param {string} query
     * @param {Record<string, number>} o
     */
    const gap = async (query, o) => {
      /** @type {Log} */
      const log = { dials: [], closes: [] };
      const c = new Client({ doc: "d", url: `ws://127.0.0.1:${port}/sync?${query}`, WebSocket: recording(log), ...o });
      c.start();
      try {
        await eventually(() => log.dials.length >= 2, "a second dial");
        return log.dials[1] - log.closes[0].at;
      } finally {
        c.stop();
      }
    };
    const asked = await gap("after=1", { minBackoff: 10, maxBackoff: 5000 });
    assert.ok(asked >= 998 && asked < 3000, `redialled after ${Math.round(asked)} ms, asked for 1 s`);
    const capped = await gap("after=3600", { minBackoff: 10, maxBackoff: 300 });
    assert.ok(capped >= 298 && capped < 2000, `redialled after ${Math.round(capped)} ms, want maxBackoff (300 ms)`);
    const none = await gap("", { minBackoff: 10, maxBackoff: 5000 });
    assert.ok(none < 990, `redialled after ${Math.round(none)} ms without Retry-After, want 5 to 10`);
    assert.ok(dials >= 3);
  } finally {
    refuser.close();
  }
});
