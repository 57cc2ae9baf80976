import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type RefreshUseState, refreshTokenUsable } from '../../../src/oauth2/token/rotation.ts';

const now = new Date('2026-01-01T00:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const used = (usedTimes: number, firstUsedMsAgo = 1000): RefreshUseState => ({
  active: false,
  firstUsedAt: ago(firstUsedMsAgo),
  usedTimes,
});

/** Uses a fresh token until the rule refuses it (capped), as the grant does: count the successes. */
function successes(periodMs: number, reuseCount: number, cap = 50): number {
  let s: RefreshUseState = { active: true, firstUsedAt: null, usedTimes: 0 };
  let n = 0;
  while (n < cap && refreshTokenUsable(s, now, { periodMs, reuseCount })) {
    s = { active: false, firstUsedAt: s.firstUsedAt ?? now, usedTimes: s.usedTimes + 1 };
    n++;
  }
  return n;
}

describe('refresh token rotation rule', () => {
  it('strict rotation: an active token once, a used one never', () => {
    const strict = { periodMs: 0, reuseCount: 0 };
    expect(refreshTokenUsable({ active: true, firstUsedAt: null, usedTimes: 0 }, now, strict)).toBe(true);
    expect(refreshTokenUsable(used(1), now, strict)).toBe(false);
    expect(successes(0, 0)).toBe(1);
    expect(successes(0, 3)).toBe(1);
  });

  it('graceful rotation: a used token while first_used_at + period > now and used_times < N', () => {
    const g = { periodMs: 60_000, reuseCount: 3 };
    expect(refreshTokenUsable(used(2, 59_999), now, g)).toBe(true);
    expect(refreshTokenUsable(used(2, 60_000), now, g)).toBe(false);
    expect(refreshTokenUsable(used(3), now, g)).toBe(false);
    expect(refreshTokenUsable({ active: false, firstUsedAt: null, usedTimes: 0 }, now, g)).toBe(false);
    expect(refreshTokenUsable(used(1000), now, { periodMs: 60_000, reuseCount: 0 })).toBe(true);
  });

  it('allows exactly N uses with a reuse count N, and any number within the period without one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 86_400_000 }), (n, period) => {
        expect(successes(period, n)).toBe(n);
        expect(successes(period, 0, 40)).toBe(40);
      }),
    );
  });
});
