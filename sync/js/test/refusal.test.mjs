// A refused or unreachable connection against the real Go server
// (test/server): the client says why within one attempt, as the
// RefusedError of connect() and ready(), client.conn and client.note,
// and stops redialling when retrying cannot help.

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, test } from "node:test";
import { decode, encode } from "@msgpack/msgpack";
import WebSocket from "ws";
import { Client, RefusedError, connect } from "../src/index.js";
import { TestServer, docName, eventually } from "./helpers.mjs";

const server = new TestServer();
before(() => server.start());
after(() => server.close());

/** A ws WebSocket that counts its dials, and may rewrite what it sends. */
function counting(rewrite = (/** @type {Uint8Array} */ b) => b) {
  const dials = { n: 0 };
  class Socket extends WebSocket {
    /** @param {any[]} args */
    constructor(...args) {
      // @ts-ignore
      super(...args);
      dials.n++;
    }
    /** @param {any} data */
    send(data) {
      super.send(rewrite(data));
    }
  }
  return { Socket, dials };
}

/**
 * Connects as member to doc with a long timeout and expects a refusal
 * well before it, then checks no redial follows.
 * @param {string} doc
 * @param {string} member
 * @param {string} reason
 * @param {(b: Uint8Array) => Uint8Array} [rewrite]
 */
async function refused(doc, member, reason, rewrite) {
  const { Socket, dials } = counting(rewrite);
  const t0 = Date.now();
  const err = await connect({ url: `${server.url}?doc=${doc}`, doc, member, token: member, WebSocket: Socket, timeout: 30000 }).then(
    () => assert.fail(`${member} on ${doc} connected`),
    (e) => e,
  );
  assert.ok(err instanceof RefusedError, String(err));
  assert.equal(err.reason, reason);
  assert.ok(Date.now() - t0 < 5000, `refused after ${Date.now() - t0} ms`);
  assert.equal(dials.n, 1);
  return err;
}

test("a wrong token is refused as unauthorized at once, with the server's reason, and not redialled", async () => {
  const err = await refused(docName(), "mallory", "unauthorized");
  assert.match(err.detail, /unauthorized/);

  // A started client says so and stops redialling.
  const { Socket, dials } = counting();
  const doc = docName();
  const c = new Client({ url: `${server.url}?doc=${doc}`, doc, member: "mallory", token: "mallory", WebSocket: Socket, minBackoff: 5, maxBackoff: 20 });
  c.start();
  try {
    await eventually(() => c.conn === "refused", "the refusal");
    assert.equal(c.refused?.reason, "unauthorized");
    assert.match(c.note?.text || "", /sign in again/);
    await assert.rejects(c.ready(30000), (e) => e instanceof RefusedError && e.reason === "unauthorized");
    const r = await c.create([{ key: "k", definition: { questions: [] } }]).then(() => null, (e) => e);
    assert.ok(r instanceof RefusedError);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(dials.n, 1, "redialled after a refusal");
  } finally {
    c.stop();
  }
});

test("a forbidden member and an unknown document are refused as forbidden and not_found", async () => {
  const err = await refused(docName(), "eve", "forbidden");
  assert.match(err.detail, /eve may not open this document/);
  await refused(`missing-${docName()}`, "ana", "not_found");
});

test("a hello of another protocol version is refused as version, and not redialled", async () => {
  const hello = (/** @type {Uint8Array} */ b) => {
    const m = /** @type {any} */ (decode(b));
    return m.kind === "hello" ? encode({ ...m, v: 99 }) : b;
  };
  const err = await refused(docName(), "ana", "version", hello);
  assert.match(err.detail, /protocol version 1/);
});

test("a server that cannot be reached is reported as unreachable at once, and redialled", async () => {
  // A port nobody listens on.
  const port = await new Promise((resolve) => {
    const l = createServer().listen(0, "127.0.0.1", () => {
      const { port } = /** @type {any} */ (l.address());
      l.close(() => resolve(port));
    });
  });
  const doc = docName();
  const url = `ws://127.0.0.1:${port}/sync?doc=${doc}`;
  const t0 = Date.now();
  const err = await connect({ url, doc, member: "ana", token: "ana", WebSocket, timeout: 30000 }).then(() => assert.fail("connected"), (e) => e);
  assert.ok(err instanceof RefusedError, String(err));
  assert.equal(err.reason, "unreachable");
  assert.ok(Date.now() - t0 < 5000, `reported after ${Date.now() - t0} ms`);

  const { Socket, dials } = counting();
  const c = new Client({ url, doc, member: "ana", token: "ana", WebSocket: Socket, minBackoff: 5, maxBackoff: 20 });
  c.start();
  try {
    await eventually(() => c.conn === "unreachable", "unreachable");
    assert.match(c.note?.text || "", /cannot be reached/);
    await eventually(() => dials.n >= 3, "redials");
    assert.equal(c.conn, "unreachable");
    assert.equal(c.refused, null);
  } finally {
    c.stop();
  }
});
