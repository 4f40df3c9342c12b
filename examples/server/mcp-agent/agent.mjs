// An agent built on the official MCP TypeScript SDK (@modelcontextprotocol/sdk),
// the client most agents use, driving the example server's Planner tools:
// read_plan, then open_decisions, then await_answers until a person's saved
// answer arrives, then await_answers again with that turn done.
//
// mcp_agent_test.go runs it against a real server:
//
//   ACCORD_MCP_URL=http://127.0.0.1:8080/mcp?doc=plan-1 ACCORD_MCP_TOKEN=… node agent.mjs
//
// It prints one JSON line per step on stdout ({"step": …}); the test saves
// an answer once it reads the "opened" line. Any error ends it with exit
// status 1 and the error on stderr.
//
// Every call runs under the SDK's request timeout (60 s by default;
// ACCORD_MCP_TIMEOUT_MS sets another) with resetTimeoutOnProgress: the
// server sends progress notifications while await_answers waits for
// people, each starting the timeout again, so a wait of any length
// succeeds.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.ACCORD_MCP_URL;
const token = process.env.ACCORD_MCP_TOKEN;
if (!url || !token) {
  throw new Error("set ACCORD_MCP_URL and ACCORD_MCP_TOKEN");
}
// undefined: the SDK's default (60 s).
const timeout = process.env.ACCORD_MCP_TIMEOUT_MS ? Number(process.env.ACCORD_MCP_TIMEOUT_MS) : undefined;

function say(step, fields) {
  process.stdout.write(JSON.stringify({ step, ...fields }) + "\n");
}

// lastCall is how the last call went: the progress notifications that
// came while it ran, and how long it took (ms).
let lastCall = { progress: 0, waited: 0 };

// call calls a tool that must succeed and returns its structured content.
// The SDK has checked that content against the tool's output schema.
async function call(client, name, args) {
  let progress = 0;
  const start = Date.now();
  const res = await client.callTool({ name, arguments: args }, undefined, {
    timeout,
    resetTimeoutOnProgress: true,
    onprogress: () => {
      progress++;
    },
  });
  if (res.isError) {
    throw new Error(`${name}: tool error ${res.content?.[0]?.text}`);
  }
  if (typeof res.structuredContent !== "object" || res.structuredContent === null || Array.isArray(res.structuredContent)) {
    throw new Error(`${name}: structured content is not an object: ${JSON.stringify(res.structuredContent)}`);
  }
  lastCall = { progress, waited: Date.now() - start };
  return res.structuredContent;
}

// refusal calls a tool that must be refused and returns {reason, message}.
async function refusal(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  if (!res.isError) {
    throw new Error(`${name}: accepted ${JSON.stringify(res.structuredContent)}, want a refusal`);
  }
  return JSON.parse(res.content[0].text);
}

const client = new Client({ name: "accord-ts-agent", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
try {
  // Listing the tools makes the SDK check every later result against the
  // tool's declared output schema.
  const { tools } = await client.listTools();
  const withoutSchema = tools.filter((t) => t.outputSchema?.type !== "object").map((t) => t.name);
  if (withoutSchema.length > 0) {
    throw new Error(`tools without an object output schema: ${withoutSchema}`);
  }
  say("tools", { names: tools.map((t) => t.name).sort() });

  const plan = await call(client, "read_plan", {});
  const passage = plan.blocks.find((b) => b.kind === "paragraph");
  say("plan", { revision: plan.revision, blocks: plan.blocks.length, passage: passage.id });

  // A revision the plan never had is refused, and opens nothing.
  const stale = await refusal(client, "open_decisions", {
    cards: [{ revision: "r0-made-up", key: "welcome", blocks: [passage.id], question: "What should the welcome screen say?", response: "text", options: [] }],
  });
  say("refused", stale);

  const opened = await call(client, "open_decisions", {
    cards: [{ revision: plan.revision, key: "welcome", blocks: [passage.id], question: "What should the welcome screen say?", response: "text", options: [] }],
  });
  const decision = opened.decisions[0];
  say("opened", { decision: decision.id, link: decision.link });

  // Blocks until a person saves an answer and its turn starts, which may
  // outlast the request timeout: the server's progress keeps it alive.
  const first = await call(client, "await_answers", {});
  say("turn", { turn: first.turn, pending: first.pending, ...lastCall });

  // Done with the turn: the answer never comes again.
  const again = await call(client, "await_answers", { done: first.turn.id, wait_seconds: 1 });
  say("after", { turn: again.turn, pending: again.pending });
} finally {
  await client.close();
}
