/**
 * Whether err is the storage refusing to grow (IndexedDB's
 * QuotaExceededError, or a host's error naming the quota).
 * @param {unknown} err
 */
export function isQuotaError(err: unknown): boolean;
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
export type Storage = {
    /**
     * resolves undefined when nothing is stored
     */
    get: (key: string) => Promise<any>;
    put: (key: string, value: any) => Promise<void>;
    delete: (key: string) => Promise<void>;
};
