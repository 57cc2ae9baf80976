/**
 * The JWK cache (key updates are not pushed into it; the TTL is how it refreshes): an in-memory LRU with a time-to-live, one per container.
 * Entries are whole key sets, weighed by their number of keys, so `maxKeys` bounds the keys held
 * (`db.jwk_cache.size`). Nothing pushes updates into it: an entry is served until its TTL runs out
 * (`db.jwk_cache.ttl`; 0 means no expiry, which is not recommended), then read again from the database.
 */
import type { Clock } from '../../core/clock.ts';

interface Entry<V> {
  value: V;
  weight: number;
  expiresAt: number;
}

export interface TtlLruOptions {
  maxWeight: number;
  ttlMs: number;
  clock: Clock;
}

export class TtlLru<V> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #opts: TtlLruOptions;
  #weight = 0;
  hits = 0;
  misses = 0;

  constructor(opts: TtlLruOptions) {
    this.#opts = opts;
  }

  get(key: string): V | undefined {
    const e = this.#entries.get(key);
    if (!e || (this.#opts.ttlMs > 0 && this.#opts.clock.now().getTime() >= e.expiresAt)) {
      if (e) this.delete(key);
      this.misses++;
      return undefined;
    }
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.#entries.delete(key);
    this.#entries.set(key, e);
    this.hits++;
    return e.value;
  }

  set(key: string, value: V, weight = 1): void {
    this.delete(key);
    if (weight > this.#opts.maxWeight) return; // larger than the whole cache: never held
    this.#entries.set(key, { value, weight, expiresAt: this.#opts.clock.now().getTime() + this.#opts.ttlMs });
    this.#weight += weight;
    for (const [k, e] of this.#entries) {
      if (this.#weight <= this.#opts.maxWeight) break;
      this.#entries.delete(k);
      this.#weight -= e.weight;
    }
  }

  delete(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#weight -= e.weight;
  }

  get size(): number {
    return this.#entries.size;
  }

  get weight(): number {
    return this.#weight;
  }
}
