/** Pure parts of webhook delivery: the signature value, the delivered object, batch backoff. */
import { describe, expect, it } from 'vitest';
import { webhookSignature } from '../../../src/core/crypto/hmac.ts';
import { backoffSeconds } from '../../../src/dsync/events/batch.ts';
import { wireEvent } from '../../../src/dsync/events/payload.ts';

describe('webhook signature', () => {
  it('is t=<ms>,s=<hex HMAC-SHA256 of "t.body">, and empty for an empty secret (Jackson)', () => {
    // Expected value computed with Python's hmac module.
    expect(webhookSignature('whsec', 1_700_000_000_000, '{"event":"user.created"}')).toBe(
      't=1700000000000,s=be4aefb6010b0568368f60c4a2d38d5652b7b5eb7ed1d3c7811e3ef5b3965baf',
    );
    expect(webhookSignature('', 1, 'x')).toBe('');
  });
});

describe('delivered event', () => {
  it("keeps Jackson's fields and order, then id, seq, created_at", () => {
    const e = wireEvent({
      id: 'e1',
      seq: 7,
      createdAt: new Date('2026-01-02T03:04:05.006Z'),
      payload: {
        event: 'group.deleted',
        tenant: 't',
        product: 'p',
        directory_id: 'd',
        data: { id: 'g', name: 'G', raw: {} },
      },
    });
    expect(Object.keys(e)).toEqual(['event', 'tenant', 'product', 'directory_id', 'data', 'id', 'seq', 'created_at']);
    expect(e.created_at).toBe('2026-01-02T03:04:05.006Z');
    // Events without data (Jackson omits it) stay without it.
    const bare = wireEvent({
      id: 'e2',
      seq: 1,
      createdAt: new Date(0),
      payload: { event: 'user.deleted', tenant: 't', product: 'p', directory_id: 'd' },
    });
    expect('data' in bare).toBe(false);
  });
});

describe('batch backoff', () => {
  it('grows as e^n seconds and stops at an hour', () => {
    expect(backoffSeconds(1)).toBeCloseTo(2.72, 2);
    expect(backoffSeconds(3)).toBeCloseTo(20.09, 1);
    expect(backoffSeconds(8)).toBeCloseTo(2981, 0);
    expect(backoffSeconds(9)).toBe(3600);
    expect(backoffSeconds(100)).toBe(3600);
  });
});
