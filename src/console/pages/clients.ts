/**
 * The console's OAuth 2.0 clients page: the list (with search), a client's details, create, edit,
 * rotate the secret, delete. Forms go through the admin API's checks (`clientDraft`); its validation
 * errors come back as the console's error page. The console's own client is shown but not edited.
 */
import type { Context } from 'koa';
import type { Registrar } from '../../core/http/routes.ts';
import { clientDraft, generateClientSecret, renderClient } from '../../oauth2/index.ts';
import { badRequest, CONSOLE_CLIENT_ID, type ConsoleEnv } from '../env.ts';
import { confirmBody, e, secretBox, table, when } from '../html.ts';

const GRANTS = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'implicit',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:ietf:params:oauth:grant-type:jwt-bearer',
];
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];

const lines = (v: string) =>
  v
    .split(/[\r\n]+/)
    .map((x) => x.trim())
    .filter(Boolean);
const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
const enc = encodeURIComponent;

function clientForm(csrf: string, action: string, v: Record<string, unknown>, submit: string): string {
  const grants = new Set(list(v.grant_types));
  const method = String(v.token_endpoint_auth_method || 'client_secret_basic');
  return `<form method="post" action="${e(action)}">
<input type="hidden" name="csrf" value="${e(csrf)}">
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
function fromForm(env: ConsoleEnv, ctx: Context, base: Record<string, unknown>) {
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

/** The console's own client is shown, never edited here: the console keeps it up to date. */
const notManaged = (id: string) => {
  if (id === CONSOLE_CLIENT_ID) throw badRequest('The console’s own client is managed by the console.');
};

/**
 * The routes of the page.
 * Long: one route after the other (list, create, details, edit, rotate the secret, delete, each
 * with its confirmation); the forms and the details are built above.
 */
export function clientPages(env: ConsoleEnv, r: Registrar): void {
  const clients = env.c.oauth2.clients;

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

  r.get('/clients/new', async function consoleClientNew(ctx) {
    const body = clientForm(
      env.csrf(ctx),
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

  r.post('/clients', async function consoleClientCreate(ctx) {
    const draft = clientDraft(fromForm(env, ctx, {}));
    const w = await clients.create(draft, { dynamic: false });
    const rendered = renderClient(w.client);
    env.page(ctx, `Client ${w.client.client_name || w.client.client_id}`, clientDetail(rendered, w.secret), {
      status: 201,
      notice: 'The client was created.',
    });
  });

  r.get('/clients/:id', async function consoleClient(ctx) {
    const client = renderClient(await clients.get(env.param(ctx, 'id')));
    env.page(ctx, `Client ${String(client.client_name || client.client_id)}`, clientDetail(client));
  });

  r.get('/clients/:id/edit', async function consoleClientEdit(ctx) {
    const id = env.param(ctx, 'id');
    notManaged(id);
    const client = renderClient(await clients.get(id));
    env.page(
      ctx,
      `Edit client ${String(client.client_name || id)}`,
      clientForm(env.csrf(ctx), `/console/clients/${enc(id)}/edit`, client, 'Save'),
    );
  });

  r.post('/clients/:id/edit', async function consoleClientSave(ctx) {
    const id = env.param(ctx, 'id');
    notManaged(id);
    // The other fields stay as they are: the form's fields over the current client.
    const current = renderClient(await clients.get(id));
    delete current.client_secret;
    const draft = clientDraft(fromForm(env, ctx, current));
    draft.client_secret = '';
    await clients.replace(id, draft);
    ctx.status = 303;
    ctx.redirect(`/console/clients/${enc(id)}?done=client-updated`);
  });

  r.get('/clients/:id/rotate', async function consoleClientRotateConfirm(ctx) {
    const id = env.param(ctx, 'id');
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
        csrf: env.csrf(ctx),
      }),
    );
  });

  r.post('/clients/:id/rotate', async function consoleClientRotate(ctx) {
    const id = env.param(ctx, 'id');
    notManaged(id);
    if (env.field(ctx, 'confirm') !== 'yes') throw badRequest('Confirm the rotation on the confirmation page.');
    const w = await clients.patch(id, [{ op: 'replace', path: '/client_secret', value: generateClientSecret() }]);
    env.page(ctx, `Client ${w.client.client_name || id}`, clientDetail(renderClient(w.client), w.secret), {
      notice: 'A new secret was generated; the old one no longer works.',
    });
  });

  r.get('/clients/:id/delete', async function consoleClientDeleteConfirm(ctx) {
    const id = env.param(ctx, 'id');
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
        csrf: env.csrf(ctx),
      }),
    );
  });

  r.post('/clients/:id/delete', async function consoleClientDelete(ctx) {
    const id = env.param(ctx, 'id');
    notManaged(id);
    if (env.field(ctx, 'confirm') !== 'yes') throw badRequest('Confirm the deletion on the confirmation page.');
    await clients.remove(id);
    ctx.status = 303;
    ctx.redirect('/console/clients?done=client-deleted');
  });
}
