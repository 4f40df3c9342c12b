// The findings and page requests of the protocol (docs/PROTOCOL.md:
// question:explore, question:explore-stop, question:take, question:page)
// on top of the page's Client, and the host's routes that start research
// and investigations (POST api/research, api/investigations).

import { Client } from "./client.js";
import { OFFLINE, READER } from "./messages.js";

/**
 * @typedef {{title?: string, url: string}} Source
 * @typedef {{id: string, kind: "research"|"spike"|"ask", status: "running"|"ready"|"failed"|"stopped", focus?: string, ref: string,
 *   title?: string, summary?: string, sources?: Source[], sourceCount?: number, branch?: string, childId?: string,
 *   stance?: "supports"|"objects", by: string, at?: any}} Finding
 */

const FINDING_REQUESTS = new Set(["question:explore", "question:explore-stop", "question:take", "question:page"]);

/**
 * A person-readable sentence for a refused findings request: the server's
 * own explanation, which names who may act (only Ana, who started this
 * research request, can stop it).
 * @param {string} kind
 * @param {string|undefined} reason
 * @param {string|undefined} message
 */
export function findingRefusal(kind, reason, message) {
  const server = message ? message.charAt(0).toUpperCase() + message.slice(1) : "";
  const end = (/** @type {string} */ s) => (/[.!?…]$/.test(s) ? s : s + ".");
  switch (reason) {
    case "disconnected":
      return OFFLINE;
    case "timeout":
      return "The server did not answer in time. Check the connection and try again.";
    case "implementation":
      return "An implementation of this decision is running; findings wait until it ends.";
    case "full":
      return "This decision holds 20 findings, all running or takes: stop one first.";
    case "unavailable":
      return kind === "question:page" ? "The page could not be created just now. Try again." : server ? end(server) : "Research is not available on this server.";
    default:
      if (reason === "forbidden" && !server) return READER;
      return server ? end(server) : `Refused (${reason || "unknown reason"}).`;
  }
}

export class PageClient extends Client {
  /** @param {any} m */
  handle(m) {
    if (m && FINDING_REQUESTS.has(m.kind)) return this.reply(m);
    return super.handle(m);
  }

  /**
   * Runs a findings request about one decision; a refusal becomes the
   * decision's note.
   * @param {string} id
   * @param {string} kind
   * @param {Record<string, any>} fields
   * @param {string} busy
   */
  async findingAct(id, kind, fields, busy) {
    const d = this.decisions.get(id) || /** @type {any} */ ({});
    d.busy = busy;
    this.notify();
    const rep = await this.request(kind, { id, ...fields });
    d.busy = "";
    d.note = rep.ok ? null : { text: findingRefusal(kind, rep.reason, rep.message), tone: "error", at: Date.now() };
    this.notify();
    return rep;
  }

  /**
   * Attaches started work or asks someone (question:explore).
   * @param {string} id
   * @param {{request?: string, investigation?: string, member?: string, focus?: string}} target
   */
  explore(id, target) {
    return this.findingAct(id, "question:explore", target, target.member ? "asking" : "exploring");
  }

  /**
   * @param {string} id
   * @param {string} finding
   */
  stopFinding(id, finding) {
    return this.findingAct(id, "question:explore-stop", { findingId: finding }, "stopping");
  }

  /**
   * The asked member's take (question:take).
   * @param {string} id
   * @param {string} finding
   * @param {string} reply
   * @param {""|"supports"|"objects"} stance
   */
  take(id, finding, reply, stance) {
    return this.findingAct(id, "question:take", { findingId: finding, reply, ...(stance ? { stance } : {}) }, "taking");
  }

  /**
   * Expands a decision to its page (question:page); the reply's record
   * carries childId.
   * @param {string} id
   */
  page(id) {
    return this.findingAct(id, "question:page", {}, "expanding");
  }

  /**
   * Starts research or an investigation through the host's route, then
   * attaches it to the decision. Returns an error sentence, or "".
   * @param {string} id the decision
   * @param {"research"|"spike"} kind
   * @param {string} focus
   */
  async startWork(id, kind, focus) {
    const d = this.decisions.get(id) || /** @type {any} */ ({});
    if (!this.write) {
      d.note = { text: READER, tone: "error", at: Date.now() };
      this.notify();
      return d.note.text;
    }
    d.busy = "starting";
    this.notify();
    let ref = "";
    try {
      const route = kind === "spike" ? "api/investigations" : "api/research";
      const r = await fetch(route, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ doc: this.doc, decision: id, focus }),
      });
      const body = await r.json().catch(() => ({}));
      if (!r.ok || typeof body.id !== "string") throw new Error(body.error || `HTTP ${r.status}`);
      ref = body.id;
    } catch (e) {
      d.busy = "";
      const what = kind === "spike" ? "The investigation" : "Research";
      const msg = e instanceof Error ? e.message : String(e);
      d.note = { text: `${what} could not start: ${msg}.`, tone: "error", at: Date.now() };
      this.notify();
      return d.note.text;
    }
    const rep = await this.explore(id, kind === "spike" ? { investigation: ref, focus } : { request: ref, focus });
    return rep.ok ? "" : d.note?.text || "Refused.";
  }
}

/**
 * The findings of a record (msgpack omits an empty list).
 * @param {any} rec
 * @returns {Finding[]}
 */
export function findingsOf(rec) {
  return Array.isArray(rec?.findings) ? rec.findings : [];
}
