// Who answers as the Planner. While an agent connected over MCP takes a
// document's turns (docs/MCP.md), the demo Planner leaves them to it and
// says nothing in Chat; the notice here says why, and until when, so
// that a silent Planner does not look broken.

/**
 * Chat's "agent", as the server pushes it while an agent holds the turns:
 * waiting for answers (an await_answers call is open), or until a time
 * holdMinutes after its last call.
 * @typedef {{waiting: boolean, until?: string, holdMinutes: number}} Agent
 */

/**
 * The notice above Chat while an agent answers as the Planner; nothing
 * otherwise. The server drops agent when the hold ends.
 * @param {{agent?: Agent|null}} props
 */
export function PlannerAgent({ agent }) {
  if (!agent) return null;
  const text = agent.waiting
    ? `An agent is answering as the Planner and is waiting for answers; the demo Planner is paused while it waits and for ${agent.holdMinutes} minutes after.`
    : `An agent is answering as the Planner; the demo Planner is paused until ${clock(agent.until)}.`;
  return (
    <p class="banner info" role="status" aria-live="polite" data-testid="planner-agent" data-waiting={agent.waiting ? "true" : "false"}>
      {text}
    </p>
  );
}

/**
 * The time of day of an RFC 3339 instant, as the reader's clock shows it.
 * @param {string|undefined} at
 */
function clock(at) {
  const t = new Date(at || "");
  if (isNaN(t.getTime())) return "the agent's hold ends";
  return t.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}
