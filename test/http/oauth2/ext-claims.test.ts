/**
 * Extension claims: `oauth2.mirror_top_level_claims` × `oauth2.preserve_ext_claims`
 * with `oauth2.allowed_top_level_claims: [tenant, sub]`, in JWT access tokens and in introspection.
 * The consent's `session.access_token` is `{tenant, plan, sub}`; `sub` is reserved and never promoted.
 */
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import { createClient } from '../../helpers/oauth2.ts';
import { codeTokens, introspect } from '../../helpers/tokens.ts';

const SESSION = { tenant: 't1', plan: 'pro', sub: 'spoofed' };
const consent = {
  consent: (q: { requested_scope: string[] }) => ({
    grant_scope: q.requested_scope,
    session: { access_token: SESSION },
  }),
};

interface Case {
  mirror: boolean;
  preserve: boolean;
  /** `ext` in the JWT and in introspection (undefined: absent). */
  ext: Record<string, unknown> | undefined;
}

const MATRIX: Case[] = [
  { mirror: true, preserve: false, ext: SESSION },
  { mirror: true, preserve: true, ext: SESSION },
  { mirror: false, preserve: false, ext: undefined },
  { mirror: false, preserve: true, ext: { plan: 'pro', sub: 'spoofed' } },
];

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

describe.each(MATRIX)('mirror_top_level_claims=$mirror, preserve_ext_claims=$preserve', (c) => {
  it('shapes the JWT access token and the introspection response the same way', async () => {
    const t = await startTestServer({
      overrides: {
        'oauth2.mirror_top_level_claims': c.mirror,
        'oauth2.preserve_ext_claims': c.preserve,
        'oauth2.allowed_top_level_claims': ['tenant', 'sub'],
      },
    });
    servers.push(t);
    const jwtClient = await createClient(t, { access_token_strategy: 'jwt' });
    const jwt = await codeTokens(t, jwtClient, 'openid', consent);
    const jwks = createLocalJWKSet((await (await fetch(`${t.publicUrl}/.well-known/jwks.json`)).json()) as never);
    const { payload } = await jwtVerify(jwt.access_token as string, jwks);
    expect(payload.tenant).toBe('t1');
    expect(payload.sub).toBe('alice');
    expect(payload).not.toHaveProperty('plan');
    expect(payload.ext).toEqual(c.ext);

    const opaque = await createClient(t);
    const tok = await codeTokens(t, opaque, 'openid', consent);
    const info = (await introspect(t, tok.access_token as string)).body;
    expect(info.active).toBe(true);
    expect(info.tenant).toBe('t1');
    expect(info.sub).toBe('alice');
    expect(info).not.toHaveProperty('plan');
    expect(info.ext).toEqual(c.ext);
    // The JWT itself introspects with the same claims.
    const viaJwt = (await introspect(t, jwt.access_token as string)).body;
    expect({ tenant: viaJwt.tenant, ext: viaJwt.ext }).toEqual({ tenant: 't1', ext: c.ext });
  });
});
