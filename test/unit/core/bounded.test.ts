/** Per-process caches kept to a size (src/core/bounded.ts): by count, and by time for `Recent`. */
import { describe, expect, it } from 'vitest';
import { keepNewest, Recent } from '../../../src/core/bounded.ts';

describe('keepNewest', () => {
  it('keeps the newest `max` entries; setting a key again makes it the newest', () => {
    const m = new Map<number, string>();
    for (let i = 0; i < 10; i++) keepNewest(m, i, `v${i}`, 4);
    expect([...m.keys()]).toEqual([6, 7, 8, 9]);
    keepNewest(m, 6, 'again', 4);
    keepNewest(m, 10, 'v10', 4);
    expect([...m.keys()]).toEqual([8, 9, 6, 10]);
  });
});

describe('Recent', () => {
  const clock = () => {
    const c = { t: 1_000_000, now: () => c.t };
    return c;
  };

  it('serves an entry for ttlMs after it was set (or after the time given), then never again', () => {
    const c = clock();
    const r = new Recent<string, number>({ max: 100, ttlMs: 5_000, now: c.now });
    r.set('a', 1);
    r.set('b', 2, c.t - 4_000); // read 4 s ago
    c.t += 1_500;
    expect([r.get('a'), r.get('b')]).toEqual([1, undefined]);
    c.t += 3_500;
    expect(r.get('a')).toBeUndefined();
  });

  it('holds only what was set within ttlMs: expired entries go as soon as another is set', () => {
    const c = clock();
    const r = new Recent<number, string>({ max: 10_000, ttlMs: 5_000, now: c.now });
    for (let i = 0; i < 5_000; i++) {
      r.set(i, 'row');
      c.t += 1; // 1,000 sets per second
    }
    expect(r.size).toBe(5_000);
    for (let i = 5_000; i < 20_000; i++) {
      r.set(i, 'row');
      c.t += 1;
    }
    // 5 s at 1,000 per second: never more than 5,001, where a bound by count alone kept 10,000.
    expect(r.size).toBeLessThanOrEqual(5_001);
    c.t += 60_000;
    r.set(-1, 'last');
    expect(r.size).toBe(1);
  });

  it('is bounded by max within ttlMs, the oldest going first', () => {
    const c = clock();
    const r = new Recent<number, number>({ max: 3, ttlMs: 5_000, now: c.now });
    for (let i = 0; i < 5; i++) r.set(i, i);
    expect(r.size).toBe(3);
    expect([r.get(0), r.get(1), r.get(2), r.get(4)]).toEqual([undefined, undefined, 2, 4]);
    r.delete(4);
    expect([r.size, r.get(4)]).toEqual([2, undefined]);
  });
});
