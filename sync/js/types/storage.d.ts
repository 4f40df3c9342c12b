/**
 * Whether err is the storage refusing to grow (IndexedDB's
 * QuotaExceededError, or a host's error naming the quota).
 * @param {unknown} err
 */
export function isQuotaError(err: unknown): boolean;
/**
 * The storage key of this client's drafts: the server, the document, the member.
 * @param {Client} c
 */
export function storageKey(c: Client): string;
/**
 * Reports a storage problem; it never stops the client.
 * @param {Client} c
 * @param {StorageError} err
 */
export function storageFailed(c: Client, err: StorageError): void;
/**
 * Reads the stored drafts once (bounded: a storage that does not answer
 * within restoreTimeout is reported and the client goes on without it,
 * leaving the stored drafts untouched for a later start).
 * @param {Client} c
 * @returns {Promise<void>}
 */
export function restore(c: Client): Promise<void>;
/**
 * Takes the stored record v as this client's decisions (before any
 * frame: restore runs before the first connection).
 * @param {Client} c
 * @param {any} v
 */
export function restoreFrom(c: Client, v: any): void;
/**
 * A decision's stored document: a save and the change chunks received
 * since (applyChanges appends them). Anything else that changes the
 * document replaces it (Decision.doc's setter), which drops this.
 * @typedef {Uint8Array[]} Saved
 */
/**
 * Arms the write of the drafts that changed since they were stored: at
 * once after a local edit, storeDelay ms after changes from the server.
 * @param {Client} c
 */
export function scheduleStore(c: Client): void;
/**
 * Writes every decision's draft to the storage now (after the writes
 * already under way). Resolves once it is written; a failure is
 * reported, not thrown.
 * @param {Client} c
 * @returns {Promise<void>}
 */
export function flushStorage(c: Client): Promise<void>;
/**
 * Writes every decision's draft now, as one value (see flushStorage).
 * @param {Client} c
 * @returns {Promise<void>}
 */
export function store(c: Client): Promise<void>;
/**
 * Forgets the stored drafts of this document and member.
 * @param {Client} c
 * @returns {Promise<void>}
 */
export function forgetStored(c: Client): Promise<void>;
/**
 * @typedef {object} Storage
 * @property {(key: string) => Promise<any>} get resolves undefined when nothing is stored
 * @property {(key: string, value: any) => Promise<void>} put
 * @property {(key: string) => Promise<void>} delete
 */
/** Keeps records in memory: for tests, and hosts that persist nothing. */
export class MemoryStorage {
    /** @type {Map<string, any>} */
    records: Map<string, any>;
    /** @param {string} key */
    get(key: string): Promise<any>;
    /**
     * @param {string} key
     * @param {any} value
     */
    put(key: string, value: any): Promise<void>;
    /** @param {string} key */
    delete(key: string): Promise<void>;
}
/**
 * Keeps records in an IndexedDB object store (the browser's, or any
 * IDBFactory passed in, such as fake-indexeddb's under Node).
 */
export class IndexedDBStorage {
    /**
     * @param {{name?: string, indexedDB?: IDBFactory}} [opts] the database name (default "accord-drafts")
     */
    constructor(opts?: {
        name?: string;
        indexedDB?: IDBFactory;
    });
    name: string;
    factory: IDBFactory;
    /** @type {Promise<IDBDatabase>|null} */
    opening: Promise<IDBDatabase> | null;
    /** @returns {Promise<IDBDatabase>} */
    db(): Promise<IDBDatabase>;
    /**
     * @param {IDBTransactionMode} mode
     * @param {(store: IDBObjectStore) => IDBRequest} fn
     * @returns {Promise<any>}
     */
    run(mode: IDBTransactionMode, fn: (store: IDBObjectStore) => IDBRequest): Promise<any>;
    /** @param {string} key */
    get(key: string): Promise<any>;
    /**
     * @param {string} key
     * @param {any} value
     */
    put(key: string, value: any): Promise<void>;
    /** @param {string} key */
    delete(key: string): Promise<void>;
}
/**
 * A decision's stored document: a save and the change chunks received
 * since (applyChanges appends them). Anything else that changes the
 * document replaces it (Decision.doc's setter), which drops this.
 */
export type Saved = Uint8Array[];
export type Client = import("./client.js").Client;
export type Decision = import("./client.js").Decision;
export type Storage = {
    /**
     * resolves undefined when nothing is stored
     */
    get: (key: string) => Promise<any>;
    put: (key: string, value: any) => Promise<void>;
    delete: (key: string) => Promise<void>;
};
import { StorageError } from "./errors.js";
