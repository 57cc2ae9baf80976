/**
 * The console's OAuth 2.0 pages: clients (list with search, detail, create, edit, rotate secret,
 * delete), key sets (list, add a key, rotate, delete a key), a subject's login and consent
 * sessions (revoke), and the trusted issuers of the JWT bearer grant (list, add, delete). Each
 * calls the OAuth 2.0 domain's services; the services' validation errors come back as the error
 * page of the console.
 */

import type { Context } from 'koa';
import { AppError } from '../core/errors.ts';
import type { Registrar } from '../core/http/routes.ts';
import { clientBody, decodeBody, renderClient, toDraft } from '../oauth2/clients/schemas.ts';
import { generateSecret } from '../oauth2/clients/secrets.ts';
import { decodeTrustBody } from '../oauth2/trust/schemas.ts';
import { confirmBody, e, postButton, secretBox, table, when } from './html.ts';
import { CONSOLE_CLIENT_ID, type ConsoleEnv } from './index.ts';

const GRANTS = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'implicit',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:ietf:params:oauth:grant-type:jwt-bearer',
];
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];
const KEY_ALGS = ['RS256', 'ES256', 'ES512', 'PS256', 'EdDSA', 'RS512', 'HS256'];

const lines = (v: string) =>
  v
    .split(/[\r\n]+/)
    .map((x) => x.trim())
    .filter(Boolean);
const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
const enc = encodeURIComponent;
const badRequest = (description: string) => new AppError({ status: 400, code: 'Bad Request', description });

export function oauth2Pages(env: ConsoleEnv, r: Registrar): void {
  const { c } = env;
  const clients = c.oauth2.clients;
  const csrf = (ctx: Context) => env.session(ctx).csrf;
  const param = (ctx: Context, k: string) => String((ctx.params as Record<string, string>)[k] ?? '');

  // ---- OAuth 2.0 clients -------------------------------------------------------------------

  r.get('/clients', async function consoleClients(ctx) {
    const q = typeof ctx.query.q === 'string' ? ctx.query.q.trim() : '';
    const token = typeof ctx.query.page_token === 'string' ? ctx.query.page_token : undefined;
    const page = await clients.list({ pageSize: q ? '500' : '50', pageToken: token });
    const needle = q.toLowerCase();
    const items = page.items.filter(
      (x) => !needle || x.client_id.toLowerCase().includes(needle) || x.client_name.toLowerCase().includes(needle),
    );
    const rows = items.map((x) => [
      `<a href="/console/clients/${enc(x.client_id)}">${e(x.client_name || '(no name)')}</a>`,
      `<code>${e(x.client_id)}</code>`,
      e((x.grant_types ?? []).join(', ')),
      when(x.created_at),
    ]);
    const next = page.nextToken
      ? `<p><a href="/console/clients?${new URLSearchParams({ ...(q ? { q } : {}), page_token: page.nextToken })}">Next page</a></p>`
      : '';
    const body = `<div class="actions"><a class="button" href="/console/clients/new">Create a client</a></div>
<form method="get" action="/console/clients" role="search">
<label for="q">Search by name or client id</label>
<input type="search" id="q" name="q" value="${e(q)}">
<button type="submit" class="secondary">Search</button>
</form>
${table('OAuth2 clients', ['Name', 'Client id', 'Grant types', 'Created'], rows, q ? 'No client matches.' : 'No clients yet.')}
${next}`;
    env.page(ctx, 'OAuth2 clients', body);
  });

  function clientForm(ctx: Context, action: string, v: Record<string, unknown>, submit: string): string {
    const grants = new Set(list(v.grant_types));
    const method = String(v.token_endpoint_auth_method || 'client_secret_basic');
    return `<form method="post" action="${e(action)}">
<input type="hidden" name="csrf" value="${e(csrf(ctx))}">
<label for="client_name">Name</label>
<input type="text" id="client_name" name="client_name" value="${e(String(v.client_name ?? ''))}">
<label for="redirect_uris">Redirect URIs <span class="hint" id="redirect_uris-hint">One per line.</span></label>
<textarea id="redirect_uris" name="redirect_uris" aria-describedby="redirect_uris-hint">${e(list(v.redirect_uris).join('\n'))}</textarea>
<fieldset>
<legend>Grant types</legend>
${GRANTS.map(
  (g, i) =>
    `<label class="check" for="grant-${i}"><input type="checkbox" id="grant-${i}" name="grant_types" value="${e(g)}"${grants.has(g) ? ' checked' : ''}> <code>${e(g)}</code></label>`,
).join('\n')}
</fieldset>
<label for="response_types">Response types <span class="hint" id="response_types-hint">Space-separated, e.g. <code>code</code> or <code>code id_token</code>.</span></label>
<input type="text" id="response_types" name="response_types" aria-describedby="response_types-hint" value="${e(list(v.response_types).join(' '))}">
<label for="scope">Scope <span class="hint" id="scope-hint">Space-separated scopes the client may ask for.</span></label>
<input type="text" id="scope" name="scope" aria-describedby="scope-hint" value="${e(String(v.scope ?? ''))}">
<label for="audience">Audiences <span class="hint" id="audience-hint">One per line.</span></label>
<textarea id="audience" name="audience" aria-describedby="audience-hint">${e(list(v.audience).join('\n'))}</textarea>
<label for="post_logout_redirect_uris">Post-logout redirect URIs <span class="hint" id="plr-hint">One per line.</span></label>
<textarea id="post_logout_redirect_uris" name="post_logout_redirect_uris" aria-describedby="plr-hint">${e(list(v.post_logout_redirect_uris).join('\n'))}</textarea>
<label for="token_endpoint_auth_method">Token endpoint authentication</label>
<select id="token_endpoint_auth_method" name="token_endpoint_auth_method">
${AUTH_METHODS.map((m) => `<option value="${m}"${m === method ? ' selected' : ''}>${m}</option>`).join('')}
</select>
<label class="check" for="skip_consent"><input type="checkbox" id="skip_consent" name="skip_consent" value="1"${v.skip_consent ? ' checked' : ''}> Skip the consent screen (first-party client)</label>
<div class="actions"><button type="submit">${e(submit)}</button><a class="button secondary" href="/console/clients">Cancel</a></div>
</form>`;
  }

  /** The editable fields of the form, over `base` (the current client on edit). */
  function fromForm(ctx: Context, base: Record<string, unknown>) {
    const responseTypes = env.field(ctx, 'response_types').split(/\s+/).filter(Boolean);
    return {
      ...base,
      client_name: env.field(ctx, 'client_name').trim(),
      redirect_uris: lines(env.field(ctx, 'redirect_uris')),
      grant_types: env.fields(ctx, 'grant_types').filter((g) => GRANTS.includes(g)),
      response_types: responseTypes.length ? responseTypes : ['code'],
      scope: env.field(ctx, 'scope').trim(),
      audience: lines(env.field(ctx, 'audience')),
      post_logout_redirect_uris: lines(env.field(ctx, 'post_logout_redirect_uris')),
      token_endpoint_auth_method: AUTH_METHODS.includes(env.field(ctx, 'token_endpoint_auth_method'))
        ? env.field(ctx, 'token_endpoint_auth_method')
        : 'client_secret_basic',
      skip_consent: env.field(ctx, 'skip_consent') === '1',
    };
  }

  r.get('/clients/new', async function consoleClientNew(ctx) {
    const body = clientForm(
      ctx,
      '/console/clients',
      {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope: 'openid offline_access',
      },
      'Create client',
    );
    env.page(ctx, 'Create a client', body);
  });

  function clientDetail(client: Record<string, unknown>, secret?: string): string {
    const id = String(client.client_id);
    const row = (k: string, v: string) => `<dt>${e(k)}</dt><dd>${v}</dd>`;
    const codes = (v: unknown) =>
      list(v)
        .map((x) => `<code>${e(x)}</code>`)
        .join(' ') || '<span class="muted">none</span>';
    const managed = id === CONSOLE_CLIENT_ID;
    return `${secret ? `<div role="alert">${secretBox('client-secret', 'Client secret (shown once)', secret, true)}<p>Copy the secret now: it is stored hashed and cannot be shown again.</p></div>` : ''}
<dl>
${row('Client id', `<code id="client-id">${e(id)}</code>`)}
${row('Name', e(String(client.client_name || '')))}
${row('Redirect URIs', codes(client.redirect_uris))}
${row('Grant types', codes(client.grant_types))}
${row('Response types', codes(client.response_types))}
${row('Scope', `<code>${e(String(client.scope ?? ''))}</code>`)}
${row('Audiences', codes(client.audience))}
${row('Post-logout redirect URIs', codes(client.post_logout_redirect_uris))}
${row('Token endpoint authentication', `<code>${e(String(client.token_endpoint_auth_method ?? ''))}</code>`)}
${row('Skip consent', client.skip_consent ? 'yes' : 'no')}
${row('Created', when(client.created_at as string))}
${row('Updated', when(client.updated_at as string))}
</dl>
${
  managed
    ? '<p class="muted">This is the console’s own client; the console manages it (it is brought up to date at sign-in).</p>'
    : `<div class="actions">
<a class="button" href="/console/clients/${enc(id)}/edit">Edit</a>
<a class="button secondary" href="/console/clients/${enc(id)}/rotate">Rotate secret</a>
<a class="button danger" href="/console/clients/${enc(id)}/delete">Delete</a>
</div>`
}`;
  }

  r.post('/clients', async function consoleClientCreate(ctx) {
    const draft = toDraft(decodeBody(clientBody, fromForm(ctx, {})));
    const w = await clients.create(draft, { dynamic: false });
    const rendered = renderClient(w.client);
    env.page(ctx, `Client ${w.client.client_name || w.client.client_id}`, clientDetail(rendered, w.secret), {
      status: 201,
      notice: 'The client was created.',
    });
  });

  const notManaged = (id: string) => {
    if (id === CONSOLE_CLIENT_ID) throw badRequest('The console’s own client is managed by the console.');
  };

  r.get('/clients/:id', async function consoleClient(ctx) {
    const client = renderClient(await clients.get(param(ctx, 'id')));
    env.page(ctx, `Client ${String(client.client_name || client.client_id)}`, clientDetail(client));
  });

  r.get('/clients/:id/edit', async function consoleClientEdit(ctx) {
    const id = param(ctx, 'id');
    notManaged(id);
    const client = renderClient(await clients.get(id));
    env.page(
      ctx,
      `Edit client ${String(client.client_name || id)}`,
      clientForm(ctx, `/console/clients/${enc(id)}/edit`, client, 'Save'),
    );
  });

  r.post('/clients/:id/edit', async function consoleClientSave(ctx) {
    const id = param(ctx, 'id');
    notManaged(id);
    // The other fields stay as they are: the form's fields over the current client.
    const current = renderClient(await clients.get(id));
    delete current.client_secret;
    const draft = toDraft(decodeBody(clientBody, fromForm(ctx, current)));
    draft.client_secret = '';
    await clients.replace(id, draft);
    ctx.status = 303;
    ctx.redirect(`/console/clients/${enc(id)}?done=client-updated`);
  });

  r.get('/clients/:id/rotate', async function consoleClientRotateConfirm(ctx) {
    const id = param(ctx, 'id');
    notManaged(id);
    const client = await clients.get(id);
    env.page(
      ctx,
      `Rotate the secret of ${client.client_name || id}`,
      confirmBody({
        action: `/console/clients/${enc(id)}/rotate`,
        question: `Generate a new secret for ${client.client_name || id}?`,
        consequence:
          'The current secret stops working at once: the client must be given the new secret before it can authenticate again.',
        button: 'Rotate secret',
        back: `/console/clients/${enc(id)}`,
        csrf: csrf(ctx),
      }),
    );
  });

  r.post('/clients/:id/rotate', async function consoleClientRotate(ctx) {
    const id = param(ctx, 'id');
    notManaged(id);
    if (env.field(ctx, 'confirm') !== 'yes') throw badRequest('Confirm the rotation on the confirmation page.');
    const w = await clients.patch(id, [{ op: 'replace', path: '/client_secret', value: generateSecret() }]);
    env.page(ctx, `Client ${w.client.client_name || id}`, clientDetail(renderClient(w.client), w.secret), {
      notice: 'A new secret was generated; the old one no longer works.',
    });
  });

  r.get('/clients/:id/delete', async function consoleClientDeleteConfirm(ctx) {
    const id = param(ctx, 'id');
    notManaged(id);
    const client = await clients.get(id);
    env.page(
      ctx,
      `Delete ${client.client_name || id}`,
      confirmBody({
        action: `/console/clients/${enc(id)}/delete`,
        question: `Delete the client ${client.client_name || id} (${id})?`,
        consequence: 'Every token issued to it is deleted too. This cannot be undone.',
        button: 'Delete client',
        back: `/console/clients/${enc(id)}`,
        csrf: csrf(ctx),
      }),
    );
  });

  r.post('/clients/:id/delete', async function consoleClientDelete(ctx) {
    const id = param(ctx, 'id');
    notManaged(id);
    if (env.field(ctx, 'confirm') !== 'yes') throw badRequest('Confirm the deletion on the confirmation page.');
    await clients.remove(id);
    ctx.status = 303;
    ctx.redirect('/console/clients?done=client-deleted');
  });

  // ---- Key sets ----------------------------------------------------------------------------

  const addKeyForm = (ctx: Context, set: string) => `<form method="post" action="/console/keys/add">
<input type="hidden" name="csrf" value="${e(csrf(ctx))}">
<label for="set">Key set</label>
<input type="text" id="set" name="set" required value="${e(set)}">
<label for="alg">Algorithm</label>
<select id="alg" name="alg">${KEY_ALGS.map((a) => `<option>${a}</option>`).join('')}</select>
<label for="use">Use</label>
<select id="use" name="use"><option value="sig">sig (signing)</option><option value="enc">enc (encryption)</option></select>
<label for="kid">Key id <span class="hint" id="kid-hint">Empty: a random id.</span></label>
<input type="text" id="kid" name="kid" aria-describedby="kid-hint">
<div class="actions"><button type="submit">Add key</button></div>
</form>`;

  r.get('/keys', async function consoleKeys(ctx) {
    const sets = await c.oauth2.jwks.listSets();
    const rows = sets.map((s) => [
      `<a href="/console/keys/${enc(s.sid)}"><code>${e(s.sid)}</code></a>`,
      String(s.keys),
    ]);
    env.page(
      ctx,
      'Key sets',
      `${table('Key sets', ['Set', 'Keys'], rows, 'No key sets yet.')}<h2>Add a key</h2>${addKeyForm(ctx, '')}`,
    );
  });

  r.get('/keys/:set', async function consoleKeySet(ctx) {
    const set = param(ctx, 'set');
    const { keys } = await c.oauth2.jwks.getKeySet(set);
    const rows = keys.map((k, i) => [
      `<code>${e(String(k.kid ?? ''))}</code>${i === 0 ? ' <strong>(newest: signs)</strong>' : ''}`,
      e(String(k.alg ?? '')),
      e(String(k.use ?? '')),
      e(String(k.kty ?? '')),
      postButton(`/console/keys/${enc(set)}/delete`, 'Delete…', csrf(ctx), {
        cls: 'secondary',
        fields: { kid: String(k.kid ?? '') },
      }),
    ]);
    const body = `<div class="actions">${postButton(`/console/keys/${enc(set)}/rotate`, 'Rotate: generate a new signing key', csrf(ctx))}</div>
${table(`Keys of ${set}, newest first`, ['Key id', 'Algorithm', 'Use', 'Type', 'Actions'], rows)}
<h2>Add a key</h2>${addKeyForm(ctx, set)}`;
    env.page(ctx, `Key set ${set}`, body);
  });

  r.post('/keys/add', async function consoleKeyAdd(ctx) {
    const set = env.field(ctx, 'set').trim();
    if (!set) throw badRequest('Name the key set.');
    const kid = env.field(ctx, 'kid').trim();
    await c.oauth2.jwks.createKeySet(set, {
      alg: env.field(ctx, 'alg'),
      use: env.field(ctx, 'use') || 'sig',
      ...(kid ? { kid } : {}),
    });
    ctx.status = 303;
    ctx.redirect(`/console/keys/${enc(set)}?done=key-added`);
  });

  r.post('/keys/:set/rotate', async function consoleKeyRotate(ctx) {
    const set = param(ctx, 'set');
    const { keys } = await c.oauth2.jwks.getKeySet(set);
    const newest = keys[0];
    await c.oauth2.jwks.createKeySet(set, {
      alg: String(newest?.alg ?? 'RS256'),
      use: String(newest?.use ?? 'sig'),
    });
    ctx.status = 303;
    ctx.redirect(`/console/keys/${enc(set)}?done=key-rotated`);
  });

  r.post('/keys/:set/delete', async function consoleKeyDelete(ctx) {
    const set = param(ctx, 'set');
    const kid = env.field(ctx, 'kid');
    if (env.field(ctx, 'confirm') !== 'yes') {
      return env.page(
        ctx,
        `Delete key ${kid}`,
        confirmBody({
          action: `/console/keys/${enc(set)}/delete`,
          question: `Delete the key ${kid} from ${set}?`,
          consequence: 'Tokens signed with it can no longer be verified. This cannot be undone.',
          button: 'Delete key',
          back: `/console/keys/${enc(set)}`,
          csrf: csrf(ctx),
          fields: { kid },
        }),
      );
    }
    await c.oauth2.jwks.deleteKey(set, kid);
    ctx.status = 303;
    ctx.redirect('/console/keys?done=key-deleted');
  });

  // ---- Sessions ----------------------------------------------------------------------------

  r.get('/sessions', async function consoleSessions(ctx) {
    const subject = typeof ctx.query.subject === 'string' ? ctx.query.subject.trim() : '';
    let results = '';
    if (subject) {
      const page = await c.oauth2.flows.sessions.listConsentSessions(subject, undefined, { page_size: '200' });
      const rows = page.items.map((s) => {
        const v = s as {
          consent_request?: { client?: { client_name?: unknown; client_id?: unknown } };
          grant_scope?: unknown;
          handled_at?: Date | string | null;
          remember?: unknown;
        };
        const client = v.consent_request?.client ?? {};
        return [
          `${e(String(client.client_name || ''))} <code>${e(String(client.client_id ?? ''))}</code>`,
          e(list(v.grant_scope).join(' ')),
          when(v.handled_at),
          v.remember ? 'yes' : 'no',
        ];
      });
      results = `${table(`Consent sessions of ${subject}`, ['Client', 'Granted scope', 'Granted', 'Remembered'], rows, 'No consent sessions.')}
<div class="actions">
${postButton('/console/sessions/revoke', 'Revoke all consent sessions…', csrf(ctx), { cls: 'danger', fields: { subject, kind: 'consent' } })}
${postButton('/console/sessions/revoke', 'Revoke all login sessions…', csrf(ctx), { cls: 'danger', fields: { subject, kind: 'login' } })}
</div>`;
    }
    env.page(
      ctx,
      'Sessions',
      `<form method="get" action="/console/sessions" role="search">
<label for="subject">Subject</label>
<input type="search" id="subject" name="subject" required value="${e(subject)}">
<button type="submit" class="secondary">Show sessions</button>
</form>
${results}`,
    );
  });

  r.post('/sessions/revoke', async function consoleSessionsRevoke(ctx) {
    const subject = env.field(ctx, 'subject').trim();
    const kind = env.field(ctx, 'kind') === 'login' ? 'login' : 'consent';
    if (!subject) throw badRequest('Name the subject.');
    if (env.field(ctx, 'confirm') !== 'yes') {
      return env.page(
        ctx,
        `Revoke ${kind} sessions`,
        confirmBody({
          action: '/console/sessions/revoke',
          question: `Revoke every ${kind} session of ${subject}?`,
          consequence:
            kind === 'login'
              ? 'The subject must sign in again everywhere; clients with back-channel logout are notified.'
              : 'Every consent and every token issued under it is deleted; clients must ask for consent again.',
          button: `Revoke ${kind} sessions`,
          back: `/console/sessions?subject=${enc(subject)}`,
          csrf: csrf(ctx),
          fields: { subject, kind },
        }),
      );
    }
    if (kind === 'login') await c.oauth2.flows.sessions.revokeLoginSessions(subject, undefined);
    else await c.oauth2.flows.sessions.revokeConsentSessions({ subject, all: true });
    ctx.status = 303;
    ctx.redirect(`/console/sessions?subject=${enc(subject)}&done=sessions-revoked`);
  });

  // ---- Trust relationships -----------------------------------------------------------------

  r.get('/trust', async function consoleTrust(ctx) {
    const page = await c.oauth2.trust.list({ page_size: '500' });
    const rows = page.items.map((t) => [
      `<code>${e(t.issuer)}</code>`,
      t.allowAnySubject ? '<em>any subject</em>' : e(t.subject),
      e(t.scope.join(' ')),
      `<code>${e(t.keyId)}</code>`,
      when(t.expiresAt),
      postButton(`/console/trust/${enc(t.id)}/delete`, 'Delete…', csrf(ctx), { cls: 'secondary' }),
    ]);
    const body = `${table('Trusted JWT bearer grant issuers', ['Issuer', 'Subject', 'Scope', 'Key id', 'Expires', 'Actions'], rows, 'No trust relationships.')}
<h2>Trust an issuer</h2>
<form method="post" action="/console/trust">
<input type="hidden" name="csrf" value="${e(csrf(ctx))}">
<label for="issuer">Issuer</label>
<input type="url" id="issuer" name="issuer" required>
<label for="trust-subject">Subject <span class="hint" id="trust-subject-hint">Leave empty and tick the box below to allow any subject.</span></label>
<input type="text" id="trust-subject" name="subject" aria-describedby="trust-subject-hint">
<label class="check" for="allow_any_subject"><input type="checkbox" id="allow_any_subject" name="allow_any_subject" value="1"> Allow any subject</label>
<label for="trust-scope">Scope <span class="hint" id="trust-scope-hint">Space-separated.</span></label>
<input type="text" id="trust-scope" name="scope" aria-describedby="trust-scope-hint">
<label for="jwk">Public key (JWK, JSON)</label>
<textarea id="jwk" name="jwk" required></textarea>
<label for="expires_at">Expires at <span class="hint" id="expires-hint">RFC 3339, e.g. 2030-01-01T00:00:00Z.</span></label>
<input type="text" id="expires_at" name="expires_at" required aria-describedby="expires-hint">
<div class="actions"><button type="submit">Add trust relationship</button></div>
</form>`;
    env.page(ctx, 'Trust relationships', body);
  });

  r.post('/trust', async function consoleTrustAdd(ctx) {
    let jwk: unknown;
    try {
      jwk = JSON.parse(env.field(ctx, 'jwk'));
    } catch {
      throw badRequest('The public key is not valid JSON.');
    }
    await c.oauth2.trust.create(
      decodeTrustBody({
        issuer: env.field(ctx, 'issuer').trim(),
        subject: env.field(ctx, 'subject').trim(),
        allow_any_subject: env.field(ctx, 'allow_any_subject') === '1',
        scope: env.field(ctx, 'scope').split(/\s+/).filter(Boolean),
        jwk,
        expires_at: env.field(ctx, 'expires_at').trim(),
      }),
    );
    ctx.status = 303;
    ctx.redirect('/console/trust?done=trust-added');
  });

  r.post('/trust/:id/delete', async function consoleTrustDelete(ctx) {
    const id = param(ctx, 'id');
    const t = await c.oauth2.trust.get(id);
    if (env.field(ctx, 'confirm') !== 'yes') {
      return env.page(
        ctx,
        'Delete trust relationship',
        confirmBody({
          action: `/console/trust/${enc(id)}/delete`,
          question: `Stop trusting ${t.issuer} for ${t.allowAnySubject ? 'any subject' : t.subject}?`,
          consequence: 'Its assertions are refused from now on.',
          button: 'Delete trust relationship',
          back: '/console/trust',
          csrf: csrf(ctx),
        }),
      );
    }
    await c.oauth2.trust.remove(id);
    ctx.status = 303;
    ctx.redirect('/console/trust?done=trust-deleted');
  });
}
