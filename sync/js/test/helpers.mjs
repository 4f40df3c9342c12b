// Starts the real Go server (test/server) for the package's Node tests,
// and a client per member over the ws package (Node 20 has no WebSocket).

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { connect, init } from "../src/index.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = join(here, "../../..");

await init(readFileSync(join(here, "../node_modules/@automerge/automerge/dist/automerge.wasm")));

let built = "";

/** Builds test/server once per test process. */
export function serverBinary() {
  if (built) return built;
  const dir = mkdtempSync(join(tmpdir(), "accord-js-bin-"));
  built = join(dir, "server");
  execFileSync(process.env.GO || "go", ["build", "-o", built, "./sync/js/test/server"], { cwd: root, stdio: "inherit" });
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return built;
}

/**
 * A running server on a data folder kept across restarts.
 */
export class TestServer {
  /** @param {string[]} [flags] more flags of test/server, e.g. ["-presence-silence", "1s"] */
  constructor(flags = []) {
    this.flags = flags;
    this.data = mkdtempSync(join(tmpdir(), "accord-js-data-"));
    this.addr = "127.0.0.1:0";
    /** @type {import("node:child_process").ChildProcess|null} */
    this.proc = null;
  }

  /** Starts (or starts again, on the same address and data). */
  async start() {
    const proc = spawn(serverBinary(), ["-addr", this.addr, "-data", this.data, "-exit-with-stdin", ...this.flags], { stdio: ["pipe", "pipe", "inherit"] });
    this.proc = proc;
    const lines = createInterface({ input: /** @type {any} */ (proc.stdout) });
    this.addr = await new Promise((resolve, reject) => {
      proc.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
      lines.on("line", (line) => {
        const m = /^listening (\S+)$/.exec(line);
        if (m) resolve(m[1]);
      });
    });
    this.url = `ws://${this.addr}/sync`;
  }

  /** Stops it, and waits until it has. */
  async stop() {
    const proc = this.proc;
    if (!proc) return;
    this.proc = null;
    const done = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill("SIGTERM");
    await done;
    proc.stdin?.destroy();
    proc.stdout?.destroy();
  }

  async close() {
    await this.stop();
    rmSync(this.data, { recursive: true, force: true });
  }

  /**
   * A client of doc for member, connected and ready.
   * @param {string} doc
   * @param {string} member
   * @param {Record<string, any>} [opts]
   */
  client(doc, member, opts = {}) {
    return connect({ url: `${this.url}?doc=${encodeURIComponent(doc)}`, doc, member, token: member, WebSocket, timeout: 10000, ...opts });
  }
}

/** One written question and one choice question with a matrix. */
export const DEFINITION = {
  questions: [
    { id: "why", question: "Why this plan?", response: "text", options: [], multiple: false },
    {
      id: "db", question: "Which database?", multiple: false,
      options: [{ id: "pg", label: "Postgres" }, { id: "sq", label: "SQLite" }],
      criteria: [{ id: "cost", label: "Cost" }, { id: "ops", label: "Operations" }],
    },
  ],
};

let n = 0;
/** A document name no other test uses. */
export function docName() {
  return `plan-${process.pid}-${++n}`;
}

/**
 * Resolves when pred() holds (polled), or rejects after ms.
 * @param {() => boolean} pred
 * @param {string} what
 * @param {number} [ms]
 */
export async function eventually(pred, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
