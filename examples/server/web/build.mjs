// Builds the page into dist/ (or the folder given as the first argument):
// app.js (the bundle), app.css, index.html, favicon.ico and automerge.wasm.
// The output depends only on the sources and the versions pinned in
// package-lock.json: no timestamps, hashes or absolute paths, so `make
// web-check` can rebuild into a temporary folder and compare byte for byte.

import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, "dist"));
mkdirSync(out, { recursive: true });

const common = {
  absWorkingDir: here,
  bundle: true,
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  target: ["es2022", "chrome100", "firefox100", "safari16"],
  logLevel: "warning",
};

await esbuild.build({
  ...common,
  entryPoints: ["src/main.jsx"],
  outfile: join(out, "app.js"),
  format: "esm",
  platform: "browser",
  jsx: "automatic",
  jsxImportSource: "preact",
});

await esbuild.build({
  ...common,
  entryPoints: ["src/app.css"],
  outfile: join(out, "app.css"),
});

writeFileSync(join(out, "index.html"), readFileSync(join(here, "src/index.html")));
copyFileSync(join(here, "src/favicon.ico"), join(out, "favicon.ico"));
copyFileSync(join(here, "node_modules/@automerge/automerge/dist/automerge.wasm"), join(out, "automerge.wasm"));
