/**
 * The error for a refused reply frame.
 * @param {any} rep
 * @param {string} kind
 * @param {string} [id]
 */
export function refusal(rep: any, kind: string, id?: string): RefusedError;
/**
 * A refusal's reason: the protocol's words, the client's own
 * (disconnected, timeout, unreachable), and unknown for a reply that
 * named none.
 * @typedef {"invalid"|"duplicate"|"full"|"resolved"|"resolving"|"implementation"|"stale"|"forbidden"|"not_found"|
 *   "not_settled"|"too_many"|"unavailable"|"version"|"unauthorized"|"disconnected"|"timeout"|"unreachable"|"unknown"} Reason
 */
export class RefusedError extends Error {
    /**
     * @param {Reason} reason the protocol's reason word
     * @param {string} [message] the server's explanation, if any
     * @param {{kind?: string, id?: string, reply?: any}} [about] the request's kind, the decision, the whole reply
     */
    constructor(reason: Reason, message?: string, about?: {
        kind?: string;
        id?: string;
        reply?: any;
    });
    reason: Reason;
    /** @type {string} the server's explanation, "" when it gave none */
    detail: string;
    /** @type {string} the request's kind, e.g. "question:submit" */
    kind: string;
    /** @type {string} the decision the refusal is about, "" when none */
    id: string;
    /** @type {any} the whole reply frame, when the server sent one */
    reply: any;
}
/**
 * Storage problems never stop a client: they are reported (Options
 * onStorageError, and the client's storageProblem) and the client goes
 * on from the server's document.
 *   quota       the browser refused to store more (the draft is kept in memory only)
 *   damaged     a stored draft could not be read; it is dropped
 *   foreign     the stored record is not one this client wrote (another version or layout); it is ignored
 *   unavailable the storage did not open or answer
 */
export class StorageError extends Error {
    /**
     * @param {"quota"|"damaged"|"foreign"|"unavailable"} reason
     * @param {string} message
     * @param {unknown} [cause]
     */
    constructor(reason: "quota" | "damaged" | "foreign" | "unavailable", message: string, cause?: unknown);
    reason: "unavailable" | "quota" | "damaged" | "foreign";
    cause: unknown;
}
/**
 * A refusal's reason: the protocol's words, the client's own
 * (disconnected, timeout, unreachable), and unknown for a reply that
 * named none.
 */
export type Reason = "invalid" | "duplicate" | "full" | "resolved" | "resolving" | "implementation" | "stale" | "forbidden" | "not_found" | "not_settled" | "too_many" | "unavailable" | "version" | "unauthorized" | "disconnected" | "timeout" | "unreachable" | "unknown";
