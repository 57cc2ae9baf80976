/**
 * DPoP (RFC 9449): proofs at the token endpoint for every grant, bound access tokens (`token_type`
 * DPoP, `cnf.jkt` in JWTs and introspection), userinfo demanding the proof, bound refresh tokens of
 * public clients, `dpop_jkt` binding the code, and server nonces; openid-client v6's DPoP handle as
 * the client, and hand-made proofs for every refusal.
 */
import { createHash, generateKeyPairSync, sign as nodeSign, randomUUID } from 'node:crypto';
import {
  calculateJwkThumbprint,
  decodeJwt,
  exportJWK,
  type GenerateKeyPairResult,
  generateKeyPair,
  type JWK,
  SignJWT,
} from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  authorizeUrl,
  Browser,
  CB,
  type CreatedClient,
  createClient,
  param,
  pkcePair,
  randomState,
  runFlow,
} from '../../helpers/oauth2.ts';
import { discoverAs } from '../../helpers/openid-client.ts';
import { tokenRequest } from '../../helpers/tokens.ts';

interface Key extends GenerateKeyPairResult {
  jwk: JWK;
  jkt: string;
}

async function newKey(alg = 'ES256'): Promise<Key> {
  const pair = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return { ...pair, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
}

/** A DPoP proof, with every part overridable to make a wrong one. */
async function proof(
  key: Key,
  o: {
    htm?: string;
    htu: string;
    ath?: string;
    nonce?: string;
    iat?: number;
    jti?: string;
    typ?: string;
    header?: Record<string, unknown>;
  },
): Promise<string> {
  return new SignJWT({
    jti: o.jti ?? randomUUID(),
    htm: o.htm ?? 'POST',
    htu: o.htu,
    iat: o.iat ?? Math.floor(Date.now() / 1000),
    ...(o.ath ? { ath: o.ath } : {}),
    ...(o.nonce ? { nonce: o.nonce } : {}),
  })
    .setProtectedHeader({ alg: 'ES256', typ: o.typ ?? 'dpop+jwt', jwk: key.jwk, ...o.header })
    .sign(key.privateKey);
}

const ath = (token: string) => createHash('sha256').update(token).digest('base64url');

let t: TestServer;
let client: CreatedClient;
let tokenUrl: string;
let userinfoUrl: string;

beforeAll(async () => {
  t = await startTestServer();
  client = await createClient(t, {
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
    scope: 'openid offline_access read',
  });
  tokenUrl = `${t.publicUrl}/oauth2/token`;
  userinfoUrl = `${t.publicUrl}/userinfo`;
});
afterAll(() => t?.close());

const token = (form: Record<string, string>, headers: Record<string, string> = {}, c = client) =>
  tokenRequest(t, c, form, headers);

async function introspect(tokenValue: string) {
  const r = await fetch(`${t.adminUrl}/admin/oauth2/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: tokenValue }).toString(),
  });
  return (await r.json()) as Record<string, unknown>;
}

async function userinfo(headers: Record<string, string>) {
  const r = await fetch(userinfoUrl, { headers });
  return { status: r.status, www: r.headers.get('www-authenticate') ?? '', res: r };
}

/** A code flow for `c` (consent granting openid and offline_access), returning the code. */
async function code(c: CreatedClient, extra: Record<string, string> = {}) {
  const pkce = pkcePair();
  const r = await runFlow(
    t,
    new Browser(),
    authorizeUrl(t, {
      client_id: c.client_id,
      response_type: 'code',
      redirect_uri: CB,
      scope: 'openid offline_access',
      state: randomState(),
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
      ...extra,
    }),
  );
  return { code: param(r.final, 'code') as string, verifier: pkce.verifier };
}

describe('DPoP (RFC 9449)', () => {
  it('discovery names the accepted algorithms', async () => {
    const config = await discoverAs(t, client);
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toContain('ES256');
  });

  it('openid-client: a bound client_credentials token, and introspection shows its key', async () => {
    const config = await discoverAs(t, client);
    const key = await newKey();
    const handle = oidc.getDPoPHandle(config, key);
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'read' }, { DPoP: handle });
    expect(tokens.token_type).toBe('dpop');
    const info = await introspect(tokens.access_token);
    expect(info).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
    // Every endpoint that takes an access token holds it to its key: /credentials too.
    const vc = await fetch(`${t.publicUrl}/credentials`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
      body: '{"format":"jwt_vc_json"}',
    });
    expect(vc.status).toBe(401);
    expect(vc.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_token"/);
    // Without a proof the same request is an ordinary bearer token.
    const plain = await token({ grant_type: 'client_credentials', scope: 'read' });
    expect(plain.body.token_type).toBe('bearer');
    expect(await introspect(String(plain.body.access_token))).not.toHaveProperty('cnf');
  });

  it('a JWT access token carries cnf.jkt', async () => {
    const jwtClient = await createClient(t, {
      grant_types: ['client_credentials'],
      scope: 'read',
      access_token_strategy: 'jwt',
    });
    const key = await newKey();
    const r = await token(
      { grant_type: 'client_credentials', scope: 'read' },
      { dpop: await proof(key, { htu: tokenUrl }) },
      jwtClient,
    );
    expect(r.status).toBe(200);
    expect(r.body.token_type).toBe('DPoP');
    expect(decodeJwt(String(r.body.access_token)).cnf).toEqual({ jkt: key.jkt });
  });

  it('refuses wrong proofs at the token endpoint with invalid_dpop_proof', async () => {
    const key = await newKey();
    const hs = await new SignJWT({ jti: randomUUID(), htm: 'POST', htu: tokenUrl, iat: Math.floor(Date.now() / 1000) })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt' })
      .sign(new Uint8Array(32));
    const other = await newKey();
    // A proof of `other` first, so that the server keeps its key imported: a proof naming that key
    // but signed by another must still fail.
    const known = await token(
      { grant_type: 'client_credentials', scope: 'read' },
      { dpop: await proof(other, { htu: tokenUrl }) },
    );
    expect(known.status).toBe(200);
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, string]> = [
      ['not a JWT', 'abc'],
      ['symmetric algorithm', hs],
      ['wrong typ', await proof(key, { htu: tokenUrl, typ: 'JWT' })],
      ['wrong method', await proof(key, { htu: tokenUrl, htm: 'GET' })],
      ['wrong URL', await proof(key, { htu: `${t.publicUrl}/oauth2/revoke` })],
      ['too old', await proof(key, { htu: tokenUrl, iat: now - 300 })],
      ['from the future', await proof(key, { htu: tokenUrl, iat: now + 300 })],
      ['private key in the header', await proof(key, { htu: tokenUrl, header: { jwk: { ...key.jwk, d: 'AAAA' } } })],
      ['signed by another key', await proof(key, { htu: tokenUrl, header: { jwk: other.jwk } })],
      ['two proofs', `${await proof(key, { htu: tokenUrl })}, ${await proof(key, { htu: tokenUrl })}`],
    ];
    for (const [what, p] of cases) {
      const r = await token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: p });
      expect(r.status, what).toBe(400);
      expect(r.body.error, what).toBe('invalid_dpop_proof');
    }
  });

  it('accepts a proof of every allowed algorithm, and not one whose signature was altered', async () => {
    for (const alg of ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA']) {
      const pair = await generateKeyPair(alg, { extractable: true });
      const jwk = await exportJWK(pair.publicKey);
      const sign = (jti: string) =>
        new SignJWT({ jti, htm: 'POST', htu: tokenUrl, iat: Math.floor(Date.now() / 1000) })
          .setProtectedHeader({ alg, typ: 'dpop+jwt', jwk })
          .sign(pair.privateKey);
      const r = await token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: await sign(randomUUID()) });
      expect(r.status, alg).toBe(200);
      expect(await introspect(String(r.body.access_token)), alg).toMatchObject({
        cnf: { jkt: await calculateJwkThumbprint(jwk, 'sha256') },
      });
      // The same header again (its key kept), a signature one bit off.
      const good = await sign(randomUUID());
      const sig = Buffer.from(good.split('.')[2] as string, 'base64url');
      sig[sig.length >> 1] = (sig[sig.length >> 1] as number) ^ 1;
      const bad = `${good.slice(0, good.lastIndexOf('.'))}.${sig.toString('base64url')}`;
      const refused = await token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: bad });
      expect(refused.status, alg).toBe(400);
      expect(refused.body.error, alg).toBe('invalid_dpop_proof');
    }
  });

  it("refuses proofs jose's jwtVerify refused: weak or mismatched keys, extensions, expiry, malformed signatures", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = () => ({ jti: randomUUID(), htm: 'POST', htu: tokenUrl, iat: now });
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    /** A compact JWS made by hand: `sign` turns the signing input into the signature segment's bytes. */
    const jws = (header: Record<string, unknown>, payload: unknown, sign: (input: Buffer) => Buffer) => {
      const input = `${b64(header)}.${b64(payload)}`;
      return `${input}.${sign(Buffer.from(input)).toString('base64url')}`;
    };
    const ec = (curve: string) => generateKeyPairSync('ec', { namedCurve: curve });
    const p256 = ec('P-256');
    const p256jwk = p256.publicKey.export({ format: 'jwk' });
    const es256 = (input: Buffer) => nodeSign('sha256', input, { key: p256.privateKey, dsaEncoding: 'ieee-p1363' });
    const header = { alg: 'ES256', typ: 'dpop+jwt', jwk: p256jwk };
    // The control: the hand-made proof is accepted.
    const ok = await token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: jws(header, claims(), es256) });
    expect(ok.status).toBe(200);
    const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const p384 = ec('P-384');
    const cases: Array<[string, string]> = [
      [
        'RSA key of 1,024 bits',
        jws({ alg: 'RS256', typ: 'dpop+jwt', jwk: rsa1024.publicKey.export({ format: 'jwk' }) }, claims(), (i) =>
          nodeSign('sha256', i, rsa1024.privateKey),
        ),
      ],
      [
        'P-384 key for ES256',
        jws({ alg: 'ES256', typ: 'dpop+jwt', jwk: p384.publicKey.export({ format: 'jwk' }) }, claims(), (i) =>
          nodeSign('sha256', i, { key: p384.privateKey, dsaEncoding: 'ieee-p1363' }),
        ),
      ],
      ['DER signature', jws(header, claims(), (i) => nodeSign('sha256', i, p256.privateKey))],
      ['signature cut short', jws(header, claims(), (i) => es256(i).subarray(0, 63))],
      ['unknown critical extension', jws({ ...header, crit: ['exp'], exp: 1 }, claims(), es256)],
      ['unencoded payload (b64 false)', jws({ ...header, crit: ['b64'], b64: false }, claims(), es256)],
      ['key only to sign', jws({ ...header, jwk: { ...p256jwk, key_ops: ['sign'] } }, claims(), es256)],
      ['expired (exp)', jws(header, { ...claims(), exp: now - 10 }, es256)],
      ['not yet valid (nbf)', jws(header, { ...claims(), nbf: now + 60 }, es256)],
      ['payload not an object', jws(header, ['jti'], es256)],
      ['header not an object', `${Buffer.from('[1]').toString('base64url')}.${b64(claims())}.AAAA`],
      ['three parts, one empty', `${b64(header)}..${es256(Buffer.from('x')).toString('base64url')}`],
    ];
    for (const [what, p] of cases) {
      const r = await token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: p });
      expect(r.status, what).toBe(400);
      expect(r.body.error, what).toBe('invalid_dpop_proof');
    }
    // A critical b64 set to true changes nothing (RFC 7797 §3).
    const b64True = jws({ ...header, crit: ['b64'], b64: true }, claims(), es256);
    expect((await token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: b64True })).status).toBe(200);
  });

  it('dpop_bound_access_tokens: the client must send a proof with every token request (RFC 9449 §5.2)', async () => {
    const strict = await createClient(t, {
      grant_types: ['client_credentials'],
      scope: 'read',
      dpop_bound_access_tokens: true,
    });
    const shown = (await (await fetch(`${t.adminUrl}/admin/clients/${strict.client_id}`)).json()) as Record<
      string,
      unknown
    >;
    expect(shown.dpop_bound_access_tokens).toBe(true);
    const without = await token({ grant_type: 'client_credentials' }, {}, strict);
    expect(without.status).toBe(400);
    expect(without.body.error).toBe('invalid_dpop_proof');
    const key = await newKey();
    const bound = await token(
      { grant_type: 'client_credentials' },
      { dpop: await proof(key, { htu: tokenUrl }) },
      strict,
    );
    expect(bound.status).toBe(200);
    expect(bound.body.token_type).toBe('DPoP');
  });

  it('a proof is used once, across requests', async () => {
    const key = await newKey();
    const p = await proof(key, { htu: tokenUrl });
    expect((await token({ grant_type: 'client_credentials' }, { dpop: p })).status).toBe(200);
    const again = await token({ grant_type: 'client_credentials' }, { dpop: p });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_dpop_proof');
    expect(String(again.body.error_description)).toMatch(/jti/);
  });

  it('a proof sent many times at once, among fresh ones: one token for it, and no row for its copies', async () => {
    const machine = await createClient(t, { grant_types: ['client_credentials'], scope: 'read' });
    const key = await newKey();
    const replayed = await proof(key, { htu: tokenUrl });
    // More requests than token statements run at once: the copies and the fresh proofs share statements.
    const proofs = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 4 === 1 ? replayed : proof(key, { htu: tokenUrl }))),
    );
    const replies = await Promise.all(
      proofs.map((p) => token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: p }, machine)),
    );
    const copies = replies.filter((_, i) => i % 4 === 1);
    const fresh = replies.filter((_, i) => i % 4 !== 1);
    expect(fresh.map((r) => r.status)).toEqual(fresh.map(() => 200));
    expect(copies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of copies.filter((c) => c.status !== 200)) {
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_dpop_proof');
      expect(String(r.body.error_description)).toMatch(/jti/);
    }
    const { rows } = await t.container.pool.query(
      'select count(*)::int as n from oauth2_access_tokens where client_id = $1',
      [machine.client_id],
    );
    expect(rows[0].n).toBe(fresh.length + 1);
    // Every token answered is stored and bound to the key.
    for (const r of replies.filter((x) => x.status === 200))
      expect(await introspect(String(r.body.access_token))).toMatchObject({ active: true, cnf: { jkt: key.jkt } });
  });

  it('a proof of a refused token request is spent all the same', async () => {
    const key = await newKey();
    const p = await proof(key, { htu: tokenUrl });
    const refused = await token({ grant_type: 'client_credentials', scope: 'not-allowed' }, { dpop: p });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_scope');
    const again = await token({ grant_type: 'client_credentials', scope: 'read' }, { dpop: p });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_dpop_proof');
    expect(String(again.body.error_description)).toMatch(/jti/);
  });

  it('userinfo: a bound token needs the DPoP scheme and a proof of its key; openid-client does it', async () => {
    const config = await discoverAs(t, client);
    const key = await newKey();
    const handle = oidc.getDPoPHandle(config, key);
    const pkce = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CB,
      scope: 'openid offline_access',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(pkce),
      code_challenge_method: 'S256',
    });
    const flow = await runFlow(t, new Browser(), url.toString(), { login: () => ({ subject: 'alice' }) });
    const tokens = await oidc.authorizationCodeGrant(
      config,
      new URL(flow.final),
      { pkceCodeVerifier: pkce, expectedState: state },
      undefined,
      { DPoP: handle },
    );
    expect(tokens.token_type).toBe('dpop');
    const info = await oidc.fetchUserInfo(config, tokens.access_token, 'alice', { DPoP: handle });
    expect(info.sub).toBe('alice');
    const at = tokens.access_token;
    // As a bearer token: refused, and told which scheme to use.
    const asBearer = await userinfo({ authorization: `Bearer ${at}` });
    expect(asBearer.status).toBe(401);
    expect(asBearer.www).toMatch(/^DPoP /);
    expect(asBearer.www).toMatch(/error="invalid_token"/);
    // The DPoP scheme without a proof, with another key's proof, without ath, for another URL.
    const other = await newKey();
    for (const [what, headers] of [
      ['no proof', { authorization: `DPoP ${at}` }],
      [
        'another key',
        { authorization: `DPoP ${at}`, dpop: await proof(other, { htm: 'GET', htu: userinfoUrl, ath: ath(at) }) },
      ],
      ['no ath', { authorization: `DPoP ${at}`, dpop: await proof(key, { htm: 'GET', htu: userinfoUrl }) }],
      [
        'another URL',
        { authorization: `DPoP ${at}`, dpop: await proof(key, { htm: 'GET', htu: tokenUrl, ath: ath(at) }) },
      ],
    ] as Array<[string, Record<string, string>]>) {
      const r = await userinfo(headers);
      expect(r.status, what).toBe(401);
      expect(r.www, what).toMatch(/error="invalid_dpop_proof"/);
    }
    const good = await userinfo({
      authorization: `DPoP ${at}`,
      dpop: await proof(key, { htm: 'GET', htu: userinfoUrl, ath: ath(at) }),
    });
    expect(good.status).toBe(200);
    // The confidential client's refresh token is not bound: a refresh without a proof gets a bearer token.
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.token_type).toBe('bearer');
  });

  it('an unbound token presented with the DPoP scheme is refused', async () => {
    const plain = await token({ grant_type: 'client_credentials' });
    expect(plain.status).toBe(200);
    const { code: c } = await code(client);
    expect(c).toMatch(/^ory_ac_/);
    const key = await newKey();
    const at = String(plain.body.access_token);
    const r = await userinfo({
      authorization: `DPoP ${at}`,
      dpop: await proof(key, { htm: 'GET', htu: userinfoUrl, ath: ath(at) }),
    });
    expect(r.status).toBe(401);
    expect(r.www).toMatch(/error="invalid_token"/);
  });

  it("a public client's refresh token is bound to its key (RFC 9449 §5)", async () => {
    const pub = await createClient(t, {
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid offline_access',
    });
    const key = await newKey();
    const c = await code(pub);
    const first = await token(
      { grant_type: 'authorization_code', code: c.code, redirect_uri: CB, code_verifier: c.verifier },
      { dpop: await proof(key, { htu: tokenUrl }) },
      pub,
    );
    expect(first.status).toBe(200);
    const rt = String(first.body.refresh_token);
    expect(await introspect(rt)).toMatchObject({ token_use: 'refresh_token', cnf: { jkt: key.jkt } });
    const without = await token({ grant_type: 'refresh_token', refresh_token: rt }, {}, pub);
    expect(without.status).toBe(400);
    expect(without.body.error).toBe('invalid_dpop_proof');
    const other = await newKey();
    const wrongKey = await token(
      { grant_type: 'refresh_token', refresh_token: rt },
      { dpop: await proof(other, { htu: tokenUrl }) },
      pub,
    );
    expect(wrongKey.body.error).toBe('invalid_dpop_proof');
    const ok = await token(
      { grant_type: 'refresh_token', refresh_token: rt },
      { dpop: await proof(key, { htu: tokenUrl }) },
      pub,
    );
    expect(ok.status).toBe(200);
    expect(ok.body.token_type).toBe('DPoP');
  });

  it('dpop_jkt at the authorization endpoint binds the code (RFC 9449 §10)', async () => {
    const key = await newKey();
    const other = await newKey();
    const exchange = async (c: { code: string; verifier: string }, headers: Record<string, string>) =>
      token({ grant_type: 'authorization_code', code: c.code, redirect_uri: CB, code_verifier: c.verifier }, headers);
    const a = await code(client, { dpop_jkt: key.jkt });
    const none = await exchange(a, {});
    expect(none.status).toBe(400);
    expect(none.body.error).toBe('invalid_dpop_proof');
    const b = await code(client, { dpop_jkt: key.jkt });
    expect((await exchange(b, { dpop: await proof(other, { htu: tokenUrl }) })).body.error).toBe('invalid_dpop_proof');
    const c = await code(client, { dpop_jkt: key.jkt });
    const ok = await exchange(c, { dpop: await proof(key, { htu: tokenUrl }) });
    expect(ok.status).toBe(200);
    expect(ok.body.token_type).toBe('DPoP');
    const bad = await new Browser().get(
      authorizeUrl(t, {
        client_id: client.client_id,
        response_type: 'code',
        redirect_uri: CB,
        scope: 'openid',
        state: randomState(),
        dpop_jkt: 'not-a-thumbprint',
      }),
    );
    expect(param(bad.location, 'error')).toBe('invalid_request');
  });
});

describe('oauth2.dpop.use_nonce', () => {
  let s: TestServer;
  let c: CreatedClient;
  beforeAll(async () => {
    s = await startTestServer({ overrides: { 'oauth2.dpop.use_nonce': true } });
    c = await createClient(s, { grant_types: ['client_credentials'], scope: 'read' });
  });
  afterAll(() => s?.close());

  it('asks for a nonce, accepts it on the retry, and openid-client does the dance by itself', async () => {
    const url = `${s.publicUrl}/oauth2/token`;
    const key = await newKey();
    const send = (p: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`,
          dpop: p,
        },
        body: 'grant_type=client_credentials&scope=read',
      });
    const first = await send(await proof(key, { htu: url }));
    expect(first.status).toBe(400);
    expect(((await first.json()) as { error: string }).error).toBe('use_dpop_nonce');
    const nonce = first.headers.get('dpop-nonce') as string;
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const wrong = await send(await proof(key, { htu: url, nonce: 'x'.repeat(43) }));
    expect(((await wrong.json()) as { error: string }).error).toBe('use_dpop_nonce');
    const retry = await send(await proof(key, { htu: url, nonce }));
    expect(retry.status).toBe(200);
    expect(retry.headers.get('dpop-nonce')).toBe(nonce);

    const config = await discoverAs(s, c);
    const handle = oidc.getDPoPHandle(config, key);
    // openid-client retries a use_dpop_nonce answer once, with the nonce it was given.
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'read' }, { DPoP: handle });
    expect(tokens.token_type).toBe('dpop');
  });
});
