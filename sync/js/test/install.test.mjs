// The README's install steps, followed as written in an empty project:
// the package and ws install together, and the README's quick start runs
// from there against the real server.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, test } from "node:test";
import { TestServer } from "./helpers.mjs";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const root = join(pkg, "../..");
const readme = readFileSync(join(pkg, "README.md"), "utf8");

/**
 * Runs file with args in cwd; resolves with its output.
 * @param {string} file
 * @param {string[]} args
 * @param {string} cwd
 * @param {number} [timeout]
 * @returns {Promise<string>}
 */
function run(file, args, cwd, timeout = 120000) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, timeout }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(" ")}: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** The fenced block of the given language right after heading. */
function block(heading, lang) {
  const rest = readme.slice(readme.indexOf(heading));
  const m = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(rest);
  assert.ok(m, `no ${lang} block under ${heading}`);
  return m[1];
}

const servers = /** @type {TestServer[]} */ ([]);
const dirs = /** @type {string[]} */ ([]);
after(async () => {
  for (const s of servers) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test("the README's install steps give a project the package and ws, and its quick start runs there", async (t) => {
  try {
    await run("npm", ["ping", "--loglevel=error"], pkg, 20000);
  } catch (e) {
    t.skip(`npm cannot reach its registry, so the install steps cannot be followed: ${String(e).split("\n")[0]}`);
    return;
  }
  const project = mkdtempSync(join(tmpdir(), "accord-js-install-"));
  dirs.push(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "try-accord", version: "1.0.0", type: "module", private: true }));
  const steps = block("## Install", "sh").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  assert.ok(steps.length > 0, "the README's Install block has no command");
  for (const step of steps) {
    const [cmd, ...args] = step.replaceAll("/path/to/accord", root).split(/\s+/);
    assert.equal(cmd, "npm", `an install step that is not npm: ${step}`);
    await run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], project);
  }
  await run(process.execPath, ["--input-type=module", "-e", 'await import("@accord-crdt/client"); await import("ws");'], project);

  const server = new TestServer();
  servers.push(server);
  await server.start();
  writeFileSync(join(project, "quickstart.mjs"), block("## Quick start (Node)", "js"));
  const out = await run(process.execPath, ["quickstart.mjs", String(server.url)], project, 30000);
  assert.match(out, /ben sees: "The team runs it already\.", settled/);
});
