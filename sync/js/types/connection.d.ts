/**
 * Connects (and redials whenever the connection is lost). With a
 * storage, the stored drafts are restored first.
 * @param {Client} c
 */
export function start(c: Client): void;
/**
 * Closes the connection for good (switching member, leaving).
 * @param {Client} c
 */
export function stop(c: Client): void;
/**
 * Dials, and handles the socket's frames and its end (see lost). The
 * hello names, per decision, the last heads the server accepted.
 * @param {Client} c
 */
export function connect(c: Client): void;
/**
 * Handles a decoded frame of ws in arrival order. A compressed document
 * (question:doc with deflated) inflates asynchronously; the frames after
 * it wait until it is handled.
 * @param {Client} c
 * @param {WebSocket} ws
 * @param {any} m
 */
export function receive(c: Client, ws: WebSocket, m: any): void;
/**
 * Handles a frame: presence goes to the peers, any other frame to
 * handle, and the listeners hear of it.
 * @param {Client} c
 * @param {any} m
 */
export function deliver(c: Client, m: any): void;
/**
 * The connection is gone: fail an ask that waits for its reply (the
 * others are sent again on the next connection) and redial after the
 * backoff, restarted first when the connection stayed up long enough or
 * the server closed it with 1012 or 1013 (restartsBackoff); a refused
 * handshake's Retry-After (ms) lengthens the wait, up to maxBackoff.
 * A refusal (refused) fails every request and ends the redials; a dial
 * that failed before the socket opened makes conn unreachable.
 * @param {Client} c
 * @param {number} code the close code (0 when the client ended it)
 * @param {number} retryAfter
 * @param {boolean} unopened the socket never opened
 */
export function lost(c: Client, code: number, retryAfter: number, unopened: boolean): void;
/**
 * Ends the connection so the reconnect's hello catches the replicas up.
 * @param {Client} c
 */
export function resync(c: Client): void;
/**
 * Sends an encoded frame when the connection is open; false when it is
 * not.
 * @param {Client} c
 * @param {Uint8Array} frame
 */
export function send(c: Client, frame: Uint8Array): boolean;
/**
 * The sync socket's URL for doc on the page's own server (its /sync
 * route, relative to the page), for browsers. The server takes the member
 * from the session cookie the browser sends with the upgrade.
 * @param {string} doc
 * @param {string} [base] the page's address (default location.href)
 */
export function syncURL(doc: string, base?: string): string;
/**
 * The wait (ms) before redial attempt n (from 0, counted since the
 * backoff last restarted): between half and all of minBackoff·2ⁿ, capped
 * at maxBackoff, uniformly, as the Go client waits (sync/replica). The
 * jitter spreads the redials of the many clients a server restart drops
 * at once.
 * @param {number} attempt
 * @param {{minBackoff: number, maxBackoff: number}} opts
 * @param {() => number} [random] uniform in [0, 1)
 * @returns {number}
 */
export function reconnectDelay(attempt: number, { minBackoff, maxBackoff }: {
    minBackoff: number;
    maxBackoff: number;
}, random?: () => number): number;
/**
 * Whether a lost connection restarts the backoff from attempt 0, as the Go
 * client decides it. One that stayed up STABLE_CONNECTIONS minBackoffs
 * (at most maxBackoff) after its welcome ends the run of failed attempts
 * before it: its server went away, and waiting out a grown backoff would
 * only add to the outage. One the server closed with 1012 (the document
 * moved, or its host restarts) or 1013 (a commit failed, try again) is
 * served again at once, whatever came before. One that ended sooner, or
 * before its welcome, keeps the backoff growing, against a server that
 * accepts and drops.
 * @param {number} served ms since the connection's welcome; negative when it had none
 * @param {number} code its close code
 * @param {{minBackoff: number, maxBackoff: number}} opts
 * @returns {boolean}
 */
export function restartsBackoff(served: number, code: number, { minBackoff, maxBackoff }: {
    minBackoff: number;
    maxBackoff: number;
}): boolean;
/**
 * The wait (ms) a Retry-After header asks for, in seconds or as an HTTP
 * date (from at); 0 when it is absent or unreadable.
 * @param {string|undefined} v
 * @param {number} [at] ms since the epoch
 * @returns {number}
 */
export function retryAfterMs(v: string | undefined, at?: number): number;
/** The redial backoff's bounds by default (ms), the Go client's. */
export const MIN_BACKOFF: 50;
export const MAX_BACKOFF: 5000;
export type Client = import("./client.js").Client;
