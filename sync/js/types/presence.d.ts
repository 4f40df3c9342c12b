/**
 * Checks a state against the bounds the server enforces and returns the
 * frame's state (its known fields, empty ones left out). Throws a
 * RefusedError with reason invalid, as the server would refuse it.
 * @param {PresenceState} st
 * @returns {PresenceState}
 */
export function presenceState(st: PresenceState): PresenceState;
/** A monotonic clock in milliseconds. */
export function now(): number;
/**
 * Calls the onPresence listeners, once for the changes of this task.
 * @param {Client} c
 */
export function presenceChanged(c: Client): void;
/**
 * Reports each value this member had set that another member's
 * accepted edit replaced, once: the cells travel only with changes as
 * they are accepted, never with a catch-up.
 * @param {Client} c
 * @param {string} id
 * @param {any[]} cells
 */
export function noticeOverwrites(c: Client, id: string, cells: any[]): void;
/** @typedef {import("./client.js").Client} Client */
/**
 * What a connection says about itself. Every field is optional; an empty
 * state says the member is in no decision.
 * @typedef {object} PresenceState
 * @property {string} [decision] the decision the member is in (at most 64 bytes)
 * @property {string} [question] the question (at most 64 bytes)
 * @property {string} [field] a mark cell's key ("option/criterion"), "choice" or "text" (at most 200 bytes)
 * @property {[number, number]} [selection] a written answer's selection as [anchor, head], in characters, each 0 to 400,000
 * @property {boolean} [editing] the member is editing
 */
/**
 * Another connection's presence, as last heard.
 * @typedef {object} Peer
 * @property {string} conn the connection's id within the document (a member may have several)
 * @property {string} member the connection's login, as the server authorized it
 * @property {PresenceState} state its latest state
 */
/** The least time between two presence frames (ms): the server's default rate, 10 a second. */
export const PRESENCE_INTERVAL: 100;
/** How often a standing state is published again (ms): the server reports a connection silent after 30 s. */
export const PRESENCE_REFRESH: 20000;
/** The state this client publishes, paced. */
export class PresenceOut {
    /** @param {(frame: any) => boolean} send sends a frame now, false when there is no connection */
    constructor(send: (frame: any) => boolean);
    send: (frame: any) => boolean;
    /** @type {PresenceState|null} the latest state set; null: none */
    state: PresenceState | null;
    /** whether the latest state has not gone out on this connection */
    due: boolean;
    sent: number;
    /** @type {any} */
    timer: any;
    /** @param {PresenceState} state */
    set(state: PresenceState): void;
    /** A new connection: the standing state is due on it. */
    resume(): void;
    /** Sends the latest state when due and the interval allows, else arms a timer for when it will. */
    push(): void;
    /** Publishes nothing more (the client stopped). */
    stop(): void;
}
/** The other connections' presence, as last heard. */
export class Peers {
    /** this connection's own id, named by the server's `you` frame */
    self: string;
    /** @type {Map<string, Peer>} */
    all: Map<string, Peer>;
    /** bumped on every change; a view is reused until it changes */
    version: number;
    /** @type {Map<string, {version: number, peers: ReadonlyMap<string, Peer>}>} */
    views: Map<string, {
        version: number;
        peers: ReadonlyMap<string, Peer>;
    }>;
    /**
     * Takes a presence frame: this connection's own id, or a batch of
     * entries (one per connection). Reports whether the others changed.
     * @param {any} m
     */
    take(m: any): boolean;
    /** The connection is gone: so are its id and everyone's states. Reports whether there were any. */
    clear(): boolean;
    /**
     * The others in decision id (every other connection when id is
     * undefined), by connection id; the same map until it changes.
     * @param {string} [id]
     * @returns {ReadonlyMap<string, Peer>}
     */
    view(id?: string): ReadonlyMap<string, Peer>;
}
export type Client = import("./client.js").Client;
/**
 * What a connection says about itself. Every field is optional; an empty
 * state says the member is in no decision.
 */
export type PresenceState = {
    /**
     * the decision the member is in (at most 64 bytes)
     */
    decision?: string;
    /**
     * the question (at most 64 bytes)
     */
    question?: string;
    /**
     * a mark cell's key ("option/criterion"), "choice" or "text" (at most 200 bytes)
     */
    field?: string;
    /**
     * a written answer's selection as [anchor, head], in characters, each 0 to 400,000
     */
    selection?: [number, number];
    /**
     * the member is editing
     */
    editing?: boolean;
};
/**
 * Another connection's presence, as last heard.
 */
export type Peer = {
    /**
     * the connection's id within the document (a member may have several)
     */
    conn: string;
    /**
     * the connection's login, as the server authorized it
     */
    member: string;
    /**
     * its latest state
     */
    state: PresenceState;
};
