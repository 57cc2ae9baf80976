import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogCapture, startTestServer, TEST_SECRET } from '../../helpers/apps.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';

const NEW_SECRET = 'a-brand-new-system-secret-0987654321';
const UNKNOWN_SECRET = 'some-other-secret-that-never-sealed-anything';

interface Key {
  kid: string;
  d?: string;
  [m: string]: unknown;
}

const post = (base: string, set: string, body: unknown) =>
  fetch(`${base}/admin/keys/${set}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('private JSON Web Keys at rest', () => {
  let database: TestDatabase;
  let original: Key;
  beforeAll(async () => {
    database = await createTestDatabase();
    const s = await startTestServer({ database });
    try {
      original = ((await (await post(s.adminUrl, 'rotating', { alg: 'ES256', kid: 'old' })).json()) as { keys: Key[] })
        .keys[0]!;
      expect((await fetch(`${s.publicUrl}/.well-known/jwks.json`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });
  afterAll(async () => database?.drop());

  it('stores no plaintext key material in the database', async () => {
    const s = await startTestServer({ database });
    try {
      const { rows } = await s.container.pool.query<{ sid: string; kid: string; keydata: string }>(
        'select sid, kid, keydata from jwk_keys',
      );
      expect(rows.length).toBe(3); // rotating/old + the two reserved sets
      for (const r of rows) {
        expect(() => JSON.parse(r.keydata)).toThrow();
        expect(r.keydata).not.toContain('"d"');
        expect(r.keydata).not.toContain('"kty"');
        expect(r.keydata).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      }
      expect(rows.find((r) => r.kid === 'old')!.keydata).not.toContain(original.d);
      // Every column of every row, as text: no private member anywhere.
      const all = await s.container.pool.query('select row_to_json(k)::text as t from jwk_keys k');
      for (const r of all.rows) expect(r.t).not.toMatch(/"(d|p|q|dp|dq|qi|k)"\s*:/);
    } finally {
      await s.close();
    }
  });

  it('keeps old keys readable after secrets.system is rotated (new secret first, old second)', async () => {
    const s = await startTestServer({ database, overrides: { 'secrets.system': [NEW_SECRET, TEST_SECRET] } });
    try {
      const got = (await (await fetch(`${s.adminUrl}/admin/keys/rotating/old`)).json()) as { keys: Key[] };
      expect(got.keys[0]).toEqual(original);
      expect((await fetch(`${s.publicUrl}/.well-known/jwks.json`)).status).toBe(200);
      // New keys are sealed with the new secret.
      expect((await post(s.adminUrl, 'rotating', { alg: 'ES256', kid: 'new' })).status).toBe(201);
    } finally {
      await s.close();
    }
    const onlyNew = await startTestServer({ database, overrides: { 'secrets.system': [NEW_SECRET] } });
    try {
      expect((await fetch(`${onlyNew.adminUrl}/admin/keys/rotating/new`)).status).toBe(200);
      expect((await fetch(`${onlyNew.adminUrl}/admin/keys/rotating/old`)).status).toBe(500);
    } finally {
      await onlyNew.close();
    }
  });

  it('starts with an unknown secret and answers key reads with a clear error, not a crash', async () => {
    const logs = new LogCapture();
    const s = await startTestServer({
      database,
      log: logs.logger('warn'),
      overrides: { 'secrets.system': [UNKNOWN_SECRET] },
    });
    try {
      expect((await fetch(`${s.adminUrl}/health/ready`)).status).toBe(200);
      for (const url of [`${s.adminUrl}/admin/keys/rotating`, `${s.publicUrl}/.well-known/jwks.json`]) {
        const r = await fetch(url);
        expect(r.status).toBe(500);
        const body = (await r.json()) as { error: string; error_description: string };
        expect(body.error).toBe('error');
        expect(body.error_description).toMatch(/cannot be decrypted with any secret in secrets\.system/);
      }
      await expect(s.container.oauth2.keys.getSigningKey('hydra.openid.id-token')).rejects.toThrow(
        /cannot be decrypted/,
      );
      // The failure is logged without any key material.
      const text = logs.lines.join('\n');
      expect(text).toMatch(/cannot be decrypted/);
      expect(text).not.toContain(original.d);
    } finally {
      await s.close();
    }
  });
});
