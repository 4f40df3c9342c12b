// The quick start's server (test/server) as a person starts it: in the
// background, its standard input closed, it keeps serving and says what
// it serves; only the tests' -exit-with-stdin ties it to its input.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import WebSocket from "ws";
import { connect } from "../src/index.js";
import { serverBinary } from "./helpers.mjs";

/**
 * Starts the server with stdin at end of file (as `&` in a script does)
 * and resolves with it once it prints its address.
 * @param {string[]} flags
 */
async function startDetached(flags) {
  const data = mkdtempSync(join(tmpdir(), "accord-js-data-"));
  const proc = spawn(serverBinary(), ["-data", data, ...flags], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  proc.stdout.on("data", (b) => (out += b));
  proc.stderr.on("data", (b) => (err += b));
  const exited = new Promise((resolve) => proc.once("exit", (code) => resolve(code)));
  const addr = await Promise.race([
    new Promise((resolve) => {
      const poll = setInterval(() => {
        const m = /^listening (\S+)$/m.exec(out);
        if (m) {
          clearInterval(poll);
          resolve(m[1]);
        }
      }, 10);
    }),
    exited.then((code) => {
      const m = /^listening (\S+)$/m.exec(out);
      if (m) return m[1]; // it did listen, and exited at once after
      throw new Error(`server exited with ${code} before listening: ${err}`);
    }),
  ]);
  return {
    proc, addr, exited, data,
    stderr: () => err,
    async close() {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await exited;
      rmSync(data, { recursive: true, force: true });
    },
  };
}

test("the test server keeps serving with its standard input closed, and says what it serves", async () => {
  const s = await startDetached([]);
  try {
    const early = await Promise.race([s.exited, new Promise((r) => setTimeout(() => r("running"), 500))]);
    assert.equal(early, "running", `the server exited when its standard input closed: ${s.stderr()}`);
    const doc = `detached-${process.pid}`;
    const ana = await connect({ url: `ws://${s.addr}/sync?doc=${doc}`, doc, member: "ana", token: "ana", WebSocket, timeout: 5000 });
    ana.stop();
    assert.match(s.stderr(), new RegExp(`sync at ws://${s.addr}/sync\\?doc=NAME`));
    assert.match(s.stderr(), /ana and ben write, rita reads/);
    assert.match(s.stderr(), /stops on SIGTERM or Ctrl-C\n/);
  } finally {
    await s.close();
  }
});

test("with -exit-with-stdin the test server stops when its standard input closes", async () => {
  const s = await startDetached(["-exit-with-stdin"]);
  try {
    const code = await Promise.race([s.exited, new Promise((r) => setTimeout(() => r("running"), 5000))]);
    assert.equal(code, 0);
  } finally {
    await s.close();
  }
});
