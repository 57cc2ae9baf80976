/**
 * Per-process caches kept to a number of entries: a Map keeps insertion order, so the first key is
 * the entry set longest ago.
 */

/** Sets `key` as the newest entry of `map`, then drops the oldest while the map holds more than `max`. */
export function keepNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as K);
}

/**
 * Entries of use for `ttlMs` after they were set, `max` at most: a Map in insertion order, which is
 * the order of their times too, so the expired ones are at its head and go whenever an entry is
 * set. Its size is bounded by what is set within `ttlMs`, not only by `max`: an expired entry is
 * never served, and is not kept either until `max` newer ones push it out.
 */
export class Recent<K, V> {
  readonly #map = new Map<K, { at: number; value: V }>();
  readonly #max: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(o: { max: number; ttlMs: number; now?: () => number }) {
    this.#max = o.max;
    this.#ttlMs = o.ttlMs;
    this.#now = o.now ?? Date.now;
  }

  /** The value set for `key` less than `ttlMs` ago. */
  get(key: K): V | undefined {
    const e = this.#map.get(key);
    return e && this.#now() - e.at < this.#ttlMs ? e.value : undefined;
  }

  /** Sets `key` as the newest entry, as of `at` (now unless given: the time what it holds was read). */
  set(key: K, value: V, at = this.#now()): void {
    const now = this.#now();
    for (const [k, e] of this.#map) {
      if (now - e.at < this.#ttlMs) break;
      this.#map.delete(k);
    }
    keepNewest(this.#map, key, { at, value }, this.#max);
  }

  delete(key: K): void {
    this.#map.delete(key);
  }

  /** Entries held, expired ones not yet dropped included. */
  get size(): number {
    return this.#map.size;
  }
}
