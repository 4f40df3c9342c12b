// The plan as the page holds it, live, and a person's edits of its text.
// The server pushes the plan and Chat over one feed socket
// (GET api/plan/socket) whenever they change, so every window sees an
// edit, a card the Planner placed or a rewrite as it happens. An edit
// (POST api/plan/edit) is the host's edit_plan at the revision this page
// shows; when the plan moved on meanwhile (stale) and the block is still
// as the person found it, the edit is sent again at the new revision,
// else their text stays in the field for them to review.

import { reconnectDelay } from "@accord-crdt/client";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

/**
 * @typedef {{id: string, kind: string, text?: string, decision?: string, link?: string}} Block
 * @typedef {{decision: string, passage: string[], reason: string}} Pending
 * @typedef {{revision: string, blocks: Block[], pending: Pending[]}} Plan
 * @typedef {{id: string, text: string, at?: string, quiet?: boolean}} Notice
 * @typedef {{notices: Notice[], agent?: import("./planner-agent.jsx").Agent}} Chat
 * @typedef {{op: "edit"|"insert"|"delete", block?: string, after?: string, kind?: string, text?: string}} Edit
 */

/**
 * The plan and Chat of docId, as the server last pushed them over the
 * feed socket (GET api/plan/socket): each message is a whole snapshot,
 * {plan} or {chat}. A lost socket is redialled with the sync client's
 * jittered backoff (reconnectDelay: 50 ms doubling to 5 s, each wait
 * between half and all of that), also across a server restart, so that
 * the many pages a restart drops do not redial in step; the first
 * messages after it are whole snapshots again.
 * @param {string} docId
 * @returns {{plan: Plan|null, chat: Chat|null, live: boolean, error: string}}
 */
export function usePlanFeed(docId) {
  const [state, setState] = useState(
    /** @type {{plan: Plan|null, chat: Chat|null, live: boolean, error: string}} */ ({ plan: null, chat: null, live: false, error: "" }),
  );
  useEffect(() => {
    let stopped = false;
    let attempts = 0;
    /** @type {WebSocket|null} */
    let ws = null;
    /** @type {any} */
    let timer;
    const dial = () => {
      const u = new URL(`api/plan/socket?doc=${encodeURIComponent(docId)}`, location.href);
      u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
      const sock = new WebSocket(u);
      ws = sock;
      sock.onmessage = (e) => {
        attempts = 0; // served: a server that accepts and drops keeps the backoff growing
        let m;
        try {
          m = JSON.parse(e.data);
        } catch {
          return;
        }
        if (m.plan) /** @type {any} */ (window).accordPlan = m.plan;
        setState((s) => ({ ...s, ...(m.plan ? { plan: m.plan } : {}), ...(m.chat ? { chat: m.chat } : {}), live: true, error: "" }));
      };
      sock.onclose = () => {
        if (stopped) return;
        setState((s) => ({ ...s, live: false, error: s.plan ? "" : "the plan is not reachable" }));
        const delay = reconnectDelay(attempts, { minBackoff: 50, maxBackoff: 5000 });
        attempts++;
        timer = setTimeout(dial, delay);
      };
    };
    dial();
    return () => {
      stopped = true;
      clearTimeout(timer);
      ws?.close();
    };
  }, [docId]);
  return state;
}

/**
 * Sends edits at revision; on stale, reads the plan and sends them again
 * at its revision while stillValid says the edits still mean what the
 * person meant (a few times at most).
 * @param {string} docId
 * @param {string} revision
 * @param {Edit[]} edits
 * @param {(plan: Plan) => boolean} stillValid
 * @returns {Promise<{ok: boolean, reason?: string, error?: string, body?: any, plan?: Plan}>}
 */
export async function sendEdits(docId, revision, edits, stillValid) {
  const q = new URLSearchParams({ doc: docId });
  let rev = revision;
  for (let attempt = 0; ; attempt++) {
    let r;
    try {
      r = await fetch(`api/plan/edit?${q}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ revision: rev, edits }),
      });
    } catch {
      return { ok: false, reason: "unavailable", error: "The server is not reachable: your text is kept here. Try again in a moment." };
    }
    const body = await r.json().catch(() => ({}));
    if (r.ok) return { ok: true, body };
    if (body.reason !== "stale" || attempt >= 3) return { ok: false, reason: body.reason || `http-${r.status}`, error: body.error || `HTTP ${r.status}` };
    /** @type {Plan} */
    let plan;
    try {
      const pr = await fetch(`api/plan?doc=${encodeURIComponent(docId)}`, { cache: "no-store" });
      plan = await pr.json();
    } catch {
      return { ok: false, reason: "stale", error: body.error };
    }
    if (!stillValid(plan)) return { ok: false, reason: "stale", plan };
    rev = plan.revision;
  }
}

/** @param {any} body */
function pendingNote(body) {
  const n = Array.isArray(body?.anchors_pending) ? body.anchors_pending.length : 0;
  if (n === 0) return "Saved.";
  return `Saved. ${n} decision${n === 1 ? "" : "s"} ${n === 1 ? "owes" : "owe"} a review: ${n === 1 ? "its passage" : "their passages"} changed.`;
}

const KIND_LABEL = /** @type {Record<string, string>} */ ({
  title: "Title",
  heading: "Heading",
  paragraph: "Paragraph",
  table: "Table",
  diagram: "Diagram",
});

/**
 * One block of the plan in edit mode: its text in a field, Save and
 * Revert once changed, Delete, and Add below (after the cards placed
 * beside it, block after, so they stay beside it).
 * @param {{block: Block, after: string, plan: Plan, docId: string, canEdit: boolean, onDirty: (id: string, dirty: boolean) => void}} props
 */
export function BlockEditor({ block, after, plan, docId, canEdit, onDirty }) {
  const theirs = block.text || "";
  const [text, setText] = useState(theirs);
  // base is the block's text when this person started changing it: an
  // edit is sent again after a stale refusal only while the block still
  // holds it.
  const [base, setBase] = useState(/** @type {string|null} */ (null));
  const [busy, setBusy] = useState("");
  const [note, setNote] = useState(/** @type {{text: string, tone: string}|null} */ (null));
  const [adding, setAdding] = useState(false);
  const dirty = base !== null && text !== base;
  const ref = useRef(/** @type {HTMLTextAreaElement|null} */ (null));
  useEffect(() => onDirty(block.id, dirty), [dirty]);
  useEffect(() => () => onDirty(block.id, false), []);

  // Someone else's change shows unless this person is changing the block;
  // after a save the field keeps the saved text until the push brings it.
  useEffect(() => {
    if (base === null) setText(theirs);
  }, [theirs]);
  // The field grows with its text, measured before the browser paints.
  useLayoutEffect(() => {
    const e = ref.current;
    if (e) {
      e.style.height = "auto";
      e.style.height = `${e.scrollHeight + 2}px`;
    }
  }, [text]);

  const current = (/** @type {Plan} */ p) => p.blocks.find((b) => b.id === block.id && b.kind !== "decision");

  const save = async () => {
    if (!dirty || busy) return;
    if (!text.trim()) {
      setNote({ text: "A block needs text: Delete removes it.", tone: "error" });
      return;
    }
    const conflict = "Someone changed this block while you were editing it: your text is kept. Save puts yours in its place; Revert takes theirs.";
    if (theirs !== base) {
      // The page already holds someone else's newer text of this block.
      setBase(theirs);
      setNote({ text: conflict, tone: "error" });
      return;
    }
    setBusy("saving");
    setNote(null);
    const start = /** @type {string} */ (base);
    const res = await sendEdits(docId, plan.revision, [{ op: "edit", block: block.id, text }], (p) => (current(p)?.text || "") === start);
    setBusy("");
    if (res.ok) {
      setBase(null);
      setNote({ text: pendingNote(res.body), tone: "ok" });
      return;
    }
    if (res.reason === "stale" && res.plan) {
      const now = current(res.plan);
      if (!now) {
        setNote({ text: "Someone deleted this block while you were editing it.", tone: "error" });
        return;
      }
      setBase(now.text || "");
      setNote({ text: conflict, tone: "error" });
      return;
    }
    setNote({ text: res.error || "The edit was refused.", tone: "error" });
  };

  const revert = () => {
    setBase(null);
    setText(theirs);
    setNote(null);
  };

  const remove = async () => {
    setBusy("deleting");
    setNote(null);
    const res = await sendEdits(docId, plan.revision, [{ op: "delete", block: block.id }], (p) => !!current(p));
    setBusy("");
    if (!res.ok) setNote({ text: res.reason === "stale" ? "Someone deleted this block already." : res.error || "The delete was refused.", tone: "error" });
  };

  const id = block.id;
  return (
    <div class={`blockedit ${block.kind}`} data-testid={`block-editor-${id}`}>
      <label class="kind" for={`block-input-${id}`}>
        {KIND_LABEL[block.kind] || block.kind}
      </label>
      <textarea
        ref={ref}
        id={`block-input-${id}`}
        data-testid={`block-input-${id}`}
        class={`blocktext ${block.kind}`}
        rows={block.kind === "paragraph" || block.kind === "table" || block.kind === "diagram" ? 3 : 1}
        value={text}
        disabled={!canEdit || !!busy}
        onInput={(e) => {
          const v = e.currentTarget.value;
          if (base === null) setBase(theirs);
          setText(v);
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) {
            e.preventDefault();
            save();
          } else if (e.key === "Escape" && dirty) {
            e.preventDefault();
            revert();
          }
        }}
      />
      <div class="blockactions">
        {dirty && (
          <>
            <button type="button" class="btn primary" data-testid={`block-save-${id}`} disabled={!canEdit || !!busy} onClick={save}>
              {busy === "saving" ? "Saving…" : "Save"}
            </button>
            <button type="button" class="btn quiet" data-testid={`block-revert-${id}`} disabled={!!busy} onClick={revert}>
              Revert
            </button>
          </>
        )}
        {!adding && (
          <button type="button" class="btn quiet" data-testid={`block-add-${id}`} disabled={!canEdit || !!busy} onClick={() => setAdding(true)}>
            Add below
          </button>
        )}
        {block.kind !== "title" && (
          <button type="button" class="btn quiet" data-testid={`block-delete-${id}`} disabled={!canEdit || !!busy} onClick={remove}>
            {busy === "deleting" ? "Deleting…" : "Delete"}
          </button>
        )}
      </div>
      <p class={`note ${note?.tone || ""}`} role="status" aria-live="polite" data-testid={`block-note-${id}`}>
        {note?.text || ""}
      </p>
      {adding && <NewBlock id={id} after={after} plan={plan} docId={docId} canEdit={canEdit} onDone={() => setAdding(false)} />}
    </div>
  );
}

/**
 * The form that inserts a heading or a paragraph below block id, right
 * after block after (id or the last card beside it).
 * @param {{id: string, after: string, plan: Plan, docId: string, canEdit: boolean, onDone: () => void}} props
 */
function NewBlock({ id, after, plan, docId, canEdit, onDone }) {
  const [kind, setKind] = useState("paragraph");
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const add = async () => {
    if (!text.trim() || busy) return;
    setBusy(true);
    setError("");
    const res = await sendEdits(docId, plan.revision, [{ op: "insert", after, kind, text: text.trim() }], (p) =>
      p.blocks.some((b) => b.id === after),
    );
    setBusy(false);
    if (res.ok) onDone();
    else setError(res.reason === "stale" ? "The block this follows was deleted meanwhile." : res.error || "The block was refused.");
  };
  return (
    <form
      class="newblock"
      data-testid={`new-block-${id}`}
      onSubmit={(e) => {
        e.preventDefault();
        add();
      }}
    >
      <label class="sr-only" for={`new-kind-${id}`}>
        Kind of the new block
      </label>
      <select id={`new-kind-${id}`} data-testid={`new-kind-${id}`} value={kind} onChange={(e) => setKind(e.currentTarget.value)} disabled={busy}>
        <option value="paragraph">Paragraph</option>
        <option value="heading">Heading</option>
      </select>
      <label class="sr-only" for={`new-input-${id}`}>
        Text of the new block
      </label>
      <textarea
        id={`new-input-${id}`}
        data-testid={`new-input-${id}`}
        class="blocktext"
        rows={kind === "heading" ? 1 : 2}
        placeholder={kind === "heading" ? "New heading" : "New paragraph"}
        value={text}
        disabled={busy}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) {
            e.preventDefault();
            add();
          } else if (e.key === "Escape") {
            e.preventDefault();
            onDone();
          }
        }}
      />
      <div class="blockactions">
        <button type="submit" class="btn primary" data-testid={`new-save-${id}`} disabled={!canEdit || busy || !text.trim()}>
          {busy ? "Adding…" : "Add"}
        </button>
        <button type="button" class="btn quiet" data-testid={`new-cancel-${id}`} disabled={busy} onClick={onDone}>
          Cancel
        </button>
      </div>
      {error && (
        <p class="note error" role="status">
          {error}
        </p>
      )}
    </form>
  );
}

