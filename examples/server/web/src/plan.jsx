// The plan: its passages with the cards placed under them, the decisions
// placed nowhere, and Chat beside it. Both show members by name where the
// text names them by login.

import { personName, useRoster } from "./research.jsx";
import { BlockEditor } from "./plan-edit.jsx";
import { CardSlot } from "./card.jsx";
import { when } from "./format.js";

/**
 * @typedef {import("@accord-crdt/client").Client} Client
 * @typedef {import("./plan-edit.jsx").Block} Block
 * @typedef {import("./plan-edit.jsx").Plan} Plan
 * @typedef {import("./plan-edit.jsx").Pending} Pending
 */

/**
 * The plan's passages, each with the cards placed under it (or, in edit
 * mode, its editor), then the decisions placed nowhere.
 * @param {{c: Client, plan: Plan|null, nameOf: (s: string) => string, edit: {docId: string, canEdit: boolean, onDirty: (id: string, dirty: boolean) => void}|null,
 *   knownLogins: string[]}} props
 */
export function Plan({ c, plan, nameOf, edit, knownLogins }) {
  const blocks = plan?.blocks || [];
  /** @type {Map<string, Pending>} */
  const review = new Map();
  for (const p of plan?.pending || []) review.set(p.decision, p);
  /** @type {Map<string, string>} */
  const links = new Map();
  for (const b of blocks) if (b.kind === "decision" && b.decision) links.set(b.decision, b.link || "");
  /** @type {{block: Block|null, cards: string[], last: string}[]} */
  const rows = [];
  const placed = new Set();
  for (const b of blocks) {
    if (b.kind === "decision") {
      if (!b.decision) continue;
      if (rows.length === 0) rows.push({ block: null, cards: [], last: "" });
      rows[rows.length - 1].cards.push(b.decision);
      rows[rows.length - 1].last = b.id;
      placed.add(b.decision);
    } else {
      rows.push({ block: b, cards: [], last: b.id });
    }
  }
  const others = c.order.filter((id) => !placed.has(id));
  const roster = useRoster();
  const logins = new Set([...roster.map((m) => m.login.toLowerCase()), ...knownLogins]);
  const named = (/** @type {string} */ text) => namedText(text, (login) => personName(roster, nameOf, login), logins);
  return (
    <>
      {rows.map((row, i) => (
        <section class={`row${row.cards.length ? " has-cards" : ""}`} key={row.block?.id || `top-${i}`} data-testid={row.block ? `block-${row.block.id}` : undefined}>
          <div class="passage">
            {row.block &&
              (edit && plan ? (
                <BlockEditor
                  block={row.block}
                  after={row.last}
                  plan={plan}
                  docId={edit.docId}
                  canEdit={edit.canEdit}
                  onDirty={edit.onDirty}
                />
              ) : (
                <Passage block={row.block} names={named} />
              ))}
          </div>
          {row.cards.length > 0 && (
            <div class="cards">
              {row.cards.map((id) => (
                <CardSlot key={id} c={c} id={id} nameOf={nameOf} review={review.get(id)} link={links.get(id)} />
              ))}
            </div>
          )}
        </section>
      ))}
      {others.length > 0 && (
        <section class="row others" data-testid="other-decisions">
          <div class="passage">
            <h2>Other decisions</h2>
            <p class="muted">Questions asked outside the plan's passages.</p>
          </div>
          <div class="cards">
            {others.map((id) => (
              <CardSlot key={id} c={c} id={id} nameOf={nameOf} review={review.get(id)} />
            ))}
          </div>
        </section>
      )}
      {blocks.length > 0 && c.order.length === 0 && c.welcomed && (
        <p class="muted empty" data-testid="no-decisions">
          {c.write ? "No decisions yet. Press Start demo to have the Planner open some." : "No decisions yet: a member who can write can start the demo."}
        </p>
      )}
    </>
  );
}

/**
 * A plan's text names members by login (the Planner's write-ups say
 * "saved by @ana"); the page shows the names its cards use. Only the
 * logins of members are replaced, never an address such as ana@example.com.
 * @param {string} text
 * @param {(login: string) => string} nameOf
 * @param {Set<string>} logins lowercased
 */
function namedText(text, nameOf, logins) {
  return text.replace(/(^|[^\w.@])@([A-Za-z0-9][A-Za-z0-9:._-]*[A-Za-z0-9]|[A-Za-z0-9])/g, (all, pre, login) =>
    logins.has(login.toLowerCase()) ? pre + nameOf(login) : all,
  );
}

/** @param {{block: Block, names: (s: string) => string}} props */
function Passage({ block, names }) {
  const t = names(block.text || "");
  switch (block.kind) {
    case "title":
      return <h1 class="title">{t}</h1>;
    case "heading":
      return <h2>{t}</h2>;
    case "table": {
      const rows = t.split("\n").filter(Boolean).map((r) => r.split("|").map((s) => s.trim()));
      const [head, ...body] = rows;
      return (
        <table class="plantable">
          <thead>
            <tr>{(head || []).map((h, i) => <th scope="col" key={i}>{h}</th>)}</tr>
          </thead>
          <tbody>
            {body.map((r, i) => (
              <tr key={i}>{r.map((cell, j) => <td key={j}>{cell}</td>)}</tr>
            ))}
          </tbody>
        </table>
      );
    }
    case "diagram":
      return <pre class="diagram">{t}</pre>;
    default:
      return <p>{t}</p>;
  }
}

/**
 * Chat's notices name people by login handle (@ana, @demo:lily); the page
 * shows the names its cards use.
 * @param {{notices: {id: string, text: string, at?: string, quiet?: boolean}[], nameOf: (s: string) => string}} props
 */
export function Chat({ notices, nameOf }) {
  const roster = useRoster();
  if (notices.length === 0) return <p class="muted" data-testid="chat-empty">No messages yet.</p>;
  const named = (/** @type {string} */ text) => text.replace(/@([A-Za-z0-9][A-Za-z0-9:._-]*[A-Za-z0-9])/g, (_, login) => personName(roster, nameOf, login));
  return (
    <ul class="notices" aria-live="polite" data-testid="chat-notices">
      {notices.map((n) => (
        <li key={n.id} data-testid={`chat-notice-${n.id}`} class={n.quiet ? "quiet" : undefined}>
          <span>{named(n.text)}</span>
          {n.at && <time dateTime={n.at}>{when(n.at)}</time>}
        </li>
      ))}
    </ul>
  );
}
