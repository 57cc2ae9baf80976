/**
 * A directory made from its row (src/dsync/directories/stored.ts): sealed fields opened on first
 * read only, never own properties, and objects that share their hidden classes (V8 maps), so that
 * reading a directory per SCIM request leaves nothing in V8's old generation.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { directoryOf, type OpenSealed } from '../../../src/dsync/directories/stored.ts';
import type { DirectoryRow } from '../../../src/dsync/store/directories.ts';

const row = (id: string, o: Partial<DirectoryRow> = {}): DirectoryRow =>
  ({
    id,
    name: 'Acme',
    tenant: 'acme.test',
    product: 'app',
    type: 'okta-scim-v2',
    log_webhook_events: false,
    deactivated: false,
    webhook_endpoint: 'https://hooks.acme.test/dsync',
    webhook_secret: `sealed-webhook-${id}`,
    scim_path: `/api/scim/v2.0/${id}`,
    scim_secret: `sealed-scim-${id}`,
    google_domain: '',
    google_customer_id: '',
    google_access_token: '',
    google_refresh_token: '',
    google_access_token_expires_at: null,
    google_groups: null,
    created_at: new Date('2026-01-01T00:00:00Z'),
    updated_at: new Date('2026-01-01T00:00:00Z'),
    ...o,
  }) as DirectoryRow;

function opener() {
  const opened: string[] = [];
  const open: OpenSealed = (id, field, sealed) => {
    opened.push(`${id}:${field}`);
    return `plain(${sealed})`;
  };
  return { open, opened };
}

describe('directory from its row', () => {
  it('opens a sealed field on its first read only, once, and nothing else', () => {
    const { open, opened } = opener();
    const d = directoryOf(row('d1'), open);
    expect(opened).toEqual([]);
    expect(d.scim.secret).toBe('plain(sealed-scim-d1)');
    expect(d.scim.secret).toBe('plain(sealed-scim-d1)');
    expect(opened).toEqual(['d1:scim_secret']);
    expect(d.webhook.secret).toBe('plain(sealed-webhook-d1)');
    expect(d.googleAccessToken).toBe(''); // empty: nothing sealed, nothing opened
    expect(opened).toEqual(['d1:scim_secret', 'd1:webhook_secret']);
    expect(d).toMatchObject({
      id: 'd1',
      type: 'okta-scim-v2',
      googleGroups: [],
      webhook: { endpoint: row('d1').webhook_endpoint },
    });
  });

  it('takes a value set in place of the sealed one, without opening it', () => {
    const { open, opened } = opener();
    const d = directoryOf(row('d2', { google_refresh_token: 'sealed-refresh' }), open);
    d.webhook.secret = 'new-secret';
    d.googleRefreshToken = 'new-refresh';
    expect([d.webhook.secret, d.googleRefreshToken]).toEqual(['new-secret', 'new-refresh']);
    expect(opened).toEqual([]);
  });

  it('has no secret among its own properties: spreading or serialising opens and shows none', () => {
    const { open, opened } = opener();
    const d = directoryOf(row('d3', { google_access_token: 'sealed-access' }), open);
    const text = JSON.stringify([d, { ...d }, { ...d.webhook }, { ...d.scim }]);
    expect(text).not.toContain('sealed-');
    expect(text).not.toContain('plain(');
    expect(Object.keys(d.webhook)).toEqual(['endpoint']);
    expect(opened).toEqual([]);
  });

  it('gives every directory the same hidden classes, read or not (V8 maps, checked in a process of its own)', () => {
    // %HaveSameMap needs --allow-natives-syntax, a process-wide V8 flag: a child process keeps it
    // out of this worker. An accessor defined per object (the former Object.defineProperty with
    // closures of its own) gives each object maps of its own: false for all three.
    const stored = pathToFileURL(join(import.meta.dirname, '../../../src/dsync/directories/stored.ts')).href;
    const script = `
      import { directoryOf } from ${JSON.stringify(stored)};
      const same = new Function('a', 'b', 'return %HaveSameMap(a, b) && %HasFastProperties(a) && %HasFastProperties(b)');
      const row = (id) => ({
        id, name: 'Acme', tenant: 'acme.test', product: 'app', type: 'okta-scim-v2', log_webhook_events: false,
        deactivated: false, webhook_endpoint: 'https://hooks.acme.test', webhook_secret: 'sealed-w-' + id,
        scim_path: '/api/scim/v2.0/' + id, scim_secret: 'sealed-s-' + id, google_domain: '', google_customer_id: '',
        google_access_token: '', google_refresh_token: '', google_access_token_expires_at: null, google_groups: null,
        created_at: new Date(),
      });
      const open = (id, field, sealed) => 'plain:' + sealed;
      const a = directoryOf(row('a'), open);
      const b = directoryOf(row('b'), open);
      void b.scim.secret; void b.webhook.secret; b.googleAccessToken = 'set';
      console.log(JSON.stringify({ directory: same(a, b), webhook: same(a.webhook, b.webhook), scim: same(a.scim, b.scim) }));
    `;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual({ directory: true, webhook: true, scim: true });
  });
});
