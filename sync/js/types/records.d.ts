/**
 * @typedef {import("./client.js").Client} Client
 * @typedef {import("./client.js").Decision} Decision
 * @typedef {import("./client.js").DecisionRecord} DecisionRecord
 * @typedef {import("./client.js").Definition} Definition
 * @typedef {import("./client.js").Finding} Finding
 * @typedef {import("./client.js").CellProvenance} CellProvenance
 */
/**
 * @param {Client} c
 * @param {string} id
 * @returns {Decision}
 */
export function decision(c: Client, id: string): Decision;
/**
 * The decision's heads, sorted: read from its replica once after each
 * change to it (automerge spells every head out, 15 µs for 16 heads).
 * @param {Decision} d
 * @returns {string[]}
 */
export function headsOf(d: Decision): string[];
/**
 * Forgets decisions the welcome does not name (restored from storage
 * but gone from the server): the welcome lists every decision of the
 * document, and ready() waits for each held one.
 * @param {Client} c
 * @param {any[]} records
 */
export function dropUnnamed(c: Client, records: any[]): void;
/**
 * @param {Client} c
 * @param {DecisionRecord} rec
 */
export function adoptRecord(c: Client, rec: DecisionRecord): void;
/**
 * @param {Client} c
 * @param {string} id
 * @param {Definition} def
 */
export function adoptDefinition(c: Client, id: string, def: Definition): void;
/**
 * Definitions only grow: keep held when in has fewer options or criteria
 * for any held question, or lacks one.
 * @param {Definition} held
 * @param {Definition} inc
 * @returns {Definition}
 */
export function forward(held: Definition, inc: Definition): Definition;
/**
 * msgpack frames omit zero values: fill them in.
 * @param {any} def
 * @returns {Definition}
 */
export function normalizeDefinition(def: any): Definition;
/**
 * @param {any} rec
 * @returns {DecisionRecord}
 */
export function normalizeRecord(rec: any): DecisionRecord;
/**
 * The findings of a record (msgpack omits an empty list).
 * @param {any} rec
 * @returns {Finding[]}
 */
export function findingsOf(rec: any): Finding[];
/**
 * A provenance entry with its zero values filled in (msgpack omits them).
 * @param {any} c
 * @returns {CellProvenance}
 */
export function cellProvenance(c: any): CellProvenance;
/**
 * A member's login as a person reads it: capitalized, and the Planner
 * for "planner".
 * @param {string} login
 */
export function display(login: string): string;
export type Client = import("./client.js").Client;
export type Decision = import("./client.js").Decision;
export type DecisionRecord = import("./client.js").DecisionRecord;
export type Definition = import("./client.js").Definition;
export type Finding = import("./client.js").Finding;
export type CellProvenance = import("./client.js").CellProvenance;
