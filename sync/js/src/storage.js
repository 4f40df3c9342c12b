// Where a client keeps its drafts between runs: per document and member,
// each decision's last accepted revision and the local changes the server
// has not accepted yet (saved together as one automerge document and the
// accepted heads), its record, and whether this member edited it. A
// client started again with the same storage shows those drafts at once,
// offline too, and pushes the unaccepted changes when the server answers.
//
// A Storage is three async calls keyed by a string; values are plain
// objects holding strings, numbers, booleans, arrays and Uint8Arrays (what
// IndexedDB's structured clone keeps). Hosts may supply their own.

/**
 * @typedef {object} Storage
 * @property {(key: string) => Promise<any>} get resolves undefined when nothing is stored
 * @property {(key: string, value: any) => Promise<void>} put
 * @property {(key: string) => Promise<void>} delete
 */

/** Keeps records in memory: for tests, and hosts that persist nothing. */
export class MemoryStorage {
  constructor() {
    /** @type {Map<string, any>} */
    this.records = new Map();
  }

  /** @param {string} key */
  async get(key) {
    const v = this.records.get(key);
    return v === undefined ? undefined : structuredClone(v);
  }

  /**
   * @param {string} key
   * @param {any} value
   */
  async put(key, value) {
    this.records.set(key, structuredClone(value));
  }

  /** @param {string} key */
  async delete(key) {
    this.records.delete(key);
  }
}

/**
 * Keeps records in an IndexedDB object store (the browser's, or any
 * IDBFactory passed in, such as fake-indexeddb's under Node).
 */
export class IndexedDBStorage {
  /**
   * @param {{name?: string, indexedDB?: IDBFactory}} [opts] the database name (default "accord-drafts")
   */
  constructor(opts = {}) {
    this.name = opts.name || "accord-drafts";
    this.factory = opts.indexedDB || globalThis.indexedDB;
    /** @type {Promise<IDBDatabase>|null} */
    this.opening = null;
  }

  /** @returns {Promise<IDBDatabase>} */
  db() {
    if (!this.opening) {
      this.opening = new Promise((resolve, reject) => {
        if (!this.factory) throw new Error("IndexedDB is not available here");
        const req = this.factory.open(this.name, 1);
        req.onupgradeneeded = () => {
          if (!req.result.objectStoreNames.contains(STORE)) req.result.createObjectStore(STORE);
        };
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
        req.onblocked = () => reject(new Error("the drafts database is blocked by another version"));
      });
      this.opening.catch(() => {
        this.opening = null; // try again next time
      });
    }
    return this.opening;
  }

  /**
   * @param {IDBTransactionMode} mode
   * @param {(store: IDBObjectStore) => IDBRequest} fn
   * @returns {Promise<any>}
   */
  async run(mode, fn) {
    const db = await this.db();
    return new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => reject(tx.error || req.error);
      tx.onabort = () => reject(tx.error || req.error || new Error("transaction aborted"));
    });
  }

  /** @param {string} key */
  get(key) {
    return this.run("readonly", (s) => s.get(key));
  }

  /**
   * @param {string} key
   * @param {any} value
   */
  async put(key, value) {
    await this.run("readwrite", (s) => s.put(value, key));
  }

  /** @param {string} key */
  async delete(key) {
    await this.run("readwrite", (s) => s.delete(key));
  }
}

const STORE = "drafts";

/**
 * Whether err is the storage refusing to grow (IndexedDB's
 * QuotaExceededError, or a host's error naming the quota).
 * @param {unknown} err
 */
export function isQuotaError(err) {
  const e = /** @type {any} */ (err);
  return !!e && (e.name === "QuotaExceededError" || e.code === 22 || /quota/i.test(String(e.message || "")));
}
