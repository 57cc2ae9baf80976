import { describe, expect, it } from 'vitest';
import { manualClock } from '../../../src/core/clock.ts';
import { TtlLru } from '../../../src/oauth2/jwk/cache.ts';

describe('TtlLru (the JWK cache)', () => {
  it('expires entries exactly at their TTL, on the injected clock', () => {
    const clock = manualClock(new Date(0));
    const c = new TtlLru<string>({ maxWeight: 10, ttlMs: 1000, clock });
    c.set('a', 'A');
    clock.advance(999);
    expect(c.get('a')).toBe('A');
    clock.advance(1);
    expect(c.get('a')).toBeUndefined();
    expect(c.size).toBe(0);
    expect([c.hits, c.misses]).toEqual([1, 1]);
  });

  it('does not extend the TTL on a hit', () => {
    const clock = manualClock(new Date(0));
    const c = new TtlLru<string>({ maxWeight: 10, ttlMs: 1000, clock });
    c.set('a', 'A');
    clock.advance(600);
    expect(c.get('a')).toBe('A');
    clock.advance(600);
    expect(c.get('a')).toBeUndefined();
  });

  it('keeps entries without a TTL until they are evicted', () => {
    const clock = manualClock(new Date(0));
    const c = new TtlLru<string>({ maxWeight: 2, ttlMs: 0, clock });
    c.set('a', 'A');
    clock.advance(10 * 365 * 86_400_000);
    expect(c.get('a')).toBe('A');
  });

  it('bounds the total weight (keys) and evicts the least recently used sets first', () => {
    const c = new TtlLru<string>({ maxWeight: 5, ttlMs: 60_000, clock: manualClock() });
    c.set('a', 'A', 2);
    c.set('b', 'B', 2);
    expect(c.get('a')).toBe('A'); // a is now more recent than b
    c.set('c', 'C', 2); // 6 > 5: evicts b
    expect(c.get('b')).toBeUndefined();
    expect(c.get('a')).toBe('A');
    expect(c.get('c')).toBe('C');
    expect(c.weight).toBe(4);
    c.set('huge', 'H', 6); // heavier than the whole cache: not held, nothing evicted
    expect(c.get('huge')).toBeUndefined();
    expect(c.weight).toBe(4);
    c.set('a', 'A2', 1); // replacing re-weighs
    expect(c.weight).toBe(3);
    c.delete('c');
    expect(c.weight).toBe(1);
  });

  it('keeps one cache per instance (no shared module state)', () => {
    const clock = manualClock();
    const one = new TtlLru<string>({ maxWeight: 5, ttlMs: 1000, clock });
    const two = new TtlLru<string>({ maxWeight: 5, ttlMs: 1000, clock });
    one.set('a', 'A');
    expect(two.get('a')).toBeUndefined();
  });
});
