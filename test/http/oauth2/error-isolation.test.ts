/**
 * Seed behaviour 13: details added to one request's error (hints, ids, URLs, claims) never appear in
 * another request's response, even when many run at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/apps.ts';
import {
  authorizeUrl,
  Browser,
  type CreatedClient,
  createClient,
  exchangeCode,
  param,
  runFlow,
} from '../../helpers/oauth2.ts';

let t: TestServer;
let client: CreatedClient;
const N = 12;
// '~' never occurs in base64url, so random tokens and signatures cannot contain a marker by chance.
const marker = (i: number) => `m~${i}~`;
const readable = (s: string) => s.replaceAll(/%7E/gi, '~');

beforeAll(async () => {
  t = await startTestServer();
  client = await createClient(t, {
    redirect_uris: [
      'http://127.0.0.1:9999/cb',
      ...Array.from({ length: N }, (_, i) => `http://127.0.0.1:9999/${marker(i)}`),
    ],
    audience: ['https://api.example/'],
  });
});
afterAll(() => t?.close());

const base = (i: number) => ({
  client_id: client.client_id,
  response_type: 'code',
  redirect_uri: `http://127.0.0.1:9999/${marker(i)}`,
  scope: 'openid',
  state: `state-${marker(i)}`,
});

/** Each scenario returns everything the caller saw: status, headers that carry data, and body. */
type Seen = { i: number; kind: string; text: string };

async function scenario(kind: number, i: number): Promise<Seen> {
  const b = new Browser();
  switch (kind) {
    case 0: {
      const s = await b.get(authorizeUrl(t, { ...base(i), scope: `openid scope-${marker(i)}` }));
      return { i, kind: 'invalid_scope', text: s.location + (await s.res.text()) };
    }
    case 1: {
      const s = await b.get(authorizeUrl(t, { ...base(i), audience: `https://other-${marker(i)}.example/` }));
      return { i, kind: 'audience', text: s.location + (await s.res.text()) };
    }
    case 2: {
      const s = await b.get(authorizeUrl(t, { ...base(i), client_id: `client-${marker(i)}` }));
      return { i, kind: 'unknown_client', text: s.location + (await s.res.text()) };
    }
    case 3: {
      const r = await runFlow(t, b, authorizeUrl(t, base(i)), {
        consent: () => false,
        login: () => ({ subject: `user-${marker(i)}` }),
      });
      return { i, kind: 'rejected', text: r.final };
    }
    case 4: {
      const r = await fetch(`${t.publicUrl}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: `client-${marker(i)}`,
          code: `ory_ac_${marker(i)}`,
        }),
      });
      return { i, kind: 'token', text: await r.text() };
    }
    default: {
      const r = await runFlow(t, b, authorizeUrl(t, base(i)), {
        login: () => ({ subject: `user-${marker(i)}` }),
        consent: (q) => ({
          grant_scope: q.requested_scope,
          session: { id_token: { email: `${marker(i)}@example.com` } },
        }),
      });
      const tok = await exchangeCode(t, client, param(r.final, 'code') as string, {
        redirect_uri: `http://127.0.0.1:9999/${marker(i)}`,
      });
      const ui = await fetch(`${t.publicUrl}/userinfo`, {
        headers: { authorization: `Bearer ${tok.body.access_token}` },
      });
      return { i, kind: 'success', text: r.final + JSON.stringify(tok.body) + (await ui.text()) };
    }
  }
}

describe('error isolation under concurrency', () => {
  it('keeps every request’s error details to itself while failing and succeeding requests interleave', async () => {
    const jobs: Array<Promise<Seen>> = [];
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < N; i++) jobs.push(scenario((i + round) % 6, i));
    }
    const seen = (await Promise.all(jobs)).map((s) => ({ ...s, text: readable(s.text) }));
    for (const s of seen) {
      const own = marker(s.i);
      for (let j = 0; j < N; j++) {
        if (j !== s.i) expect(s.text, `${s.kind} #${s.i} leaked ${marker(j)}`).not.toContain(marker(j));
      }
      if (s.kind === 'invalid_scope') expect(decodeURIComponent(s.text)).toContain(`scope-${own}`);
      if (s.kind === 'audience') expect(decodeURIComponent(s.text)).toContain(`other-${own}`);
      if (s.kind === 'rejected') expect(s.text).toContain(`state-${own}`);
      if (s.kind === 'success') expect(s.text).toContain(`${own}@example.com`);
    }
    expect(new Set(seen.map((s) => s.kind)).size).toBe(6);
  });
});
