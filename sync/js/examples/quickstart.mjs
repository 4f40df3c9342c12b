// Two members of one document, in Node: `node quickstart.mjs ws://127.0.0.1:PORT/sync`.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import WebSocket from "ws";
import { MemoryStorage, RefusedError, connect, init, refusalText } from "@accord-crdt/client";

const require = createRequire(import.meta.url);
await init(readFileSync(require.resolve("@automerge/automerge/automerge.wasm")));

const url = process.argv[2] || "ws://127.0.0.1:8080/sync";
const doc = `quickstart-${Date.now()}`; // a fresh document each run: a saved decision stays settled
const open = (member) => connect({ url: `${url}?doc=${doc}`, doc, member, token: member, WebSocket, storage: new MemoryStorage() });

const ana = await open("ana");
const ben = await open("ben");
try {
  const [{ id }] = await ana.create([{ key: "database", definition: { questions: [
    { id: "db", question: "Which database?", options: [{ id: "pg", label: "Postgres" }, { id: "sq", label: "SQLite" }], criteria: [{ id: "cost", label: "Cost" }] },
    { id: "why", question: "Why?", response: "text" },
  ] } }]);
  ben.watch(id, (state) => {
    if (state) console.log(`ben sees: ${JSON.stringify(state.questions.why?.text ?? "")}, ${state.status}`);
  });

  ana.choose(id, "db", "pg", true);
  ana.setMark(id, "db", "pg", "cost", "yes");
  ana.setText(id, "why", "The team runs it already.");
  try {
    await ana.appendOption(id, "db", "postgres"); // labels compare without case
  } catch (e) {
    if (!(e instanceof RefusedError)) throw e;
    console.log(`refused: ${e.reason}: ${refusalText(e.kind, e.reason, e.detail)}`); // duplicate
  }
  await ana.save([id]);
  await ben.until(() => ben.state(id)?.status === "settled", 5000, "ben to see the save");
} finally {
  ana.stop(); // closes the connection: node exits once both are stopped
  ben.stop();
}
