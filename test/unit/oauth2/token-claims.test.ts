import { describe, expect, it } from 'vitest';
import { halfHash } from '../../../src/oauth2/token/issue.ts';
import { customAccessTokenClaims } from '../../../src/oauth2/token/jwt-claims.ts';
import { idTokenClaims } from '../../../src/oauth2/token/session.ts';

const ext = { tenant: 't1', role: 'admin', sub: 'evil' };

describe('JWT access token custom claims', () => {
  it('mirrors all custom claims into ext and promotes the allowed ones', () => {
    const out = customAccessTokenClaims({ allowedTopLevel: ['tenant', 'sub'], mirror: true, preserveExt: false }, ext);
    expect(out).toEqual({ tenant: 't1', ext });
  });

  it('without mirroring drops the non-promoted claims unless preserve_ext_claims is on', () => {
    const opts = { allowedTopLevel: ['tenant'], mirror: false };
    expect(customAccessTokenClaims({ ...opts, preserveExt: false }, ext)).toEqual({ tenant: 't1' });
    expect(customAccessTokenClaims({ ...opts, preserveExt: true }, ext)).toEqual({
      tenant: 't1',
      ext: { role: 'admin', sub: 'evil' },
    });
  });
});

describe('ID token claims', () => {
  it('lets standard claims win over the consent session claims', () => {
    const claims = idTokenClaims({
      iss: 'https://issuer/',
      sub: 'alice',
      aud: ['c1'],
      auth_time: 10,
      rat: 9,
      sid: 's1',
      extra: { sub: 'mallory', email: 'a@example.com', exp: 1 },
    });
    expect(claims).toEqual({
      email: 'a@example.com',
      iss: 'https://issuer/',
      sub: 'alice',
      aud: ['c1'],
      auth_time: 10,
      rat: 9,
      sid: 's1',
    });
  });

  it('computes at_hash as the left half of the SHA-256 of the token', () => {
    // OpenID Connect Core example (A.3): access token jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y.
    expect(halfHash('RS256', 'jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y')).toBe('77QmUPtjPfzWtF2AnpK9RQ');
  });
});
