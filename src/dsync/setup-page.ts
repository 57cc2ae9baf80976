/**
 * The page a setup link opens (`<dsync.external_url>/setup/<token>`, on the public listener): a
 * tenant's IT administrator picks the identity provider, creates the directory, reads the SCIM base
 * URL, reveals (or rotates) the bearer secret, follows the provider's steps, and watches the
 * connection (last request, users and groups received, last change, last error). Google Workspace
 * directories get the authorization step instead of a secret.
 *
 * Server-rendered, no JavaScript needed (a copy button appears with it), the strict CSP of
 * `sendHtml`, forms posting only to this origin. Every form carries a CSRF token bound to the link
 * (an HMAC of the link's token under the `setup_page` key) and a POST must come from this origin
 * (`Origin`, when the browser sends one). The secret is shown only in the answer to a POST (reveal,
 * rotate), never in a page a GET or the history gives back, and every reveal is audited
 * (`dsync.setup_link.used`). The link's token is in the path: pages send `Referrer-Policy:
 * no-referrer` and link nowhere else.
 */
import { createHmac } from 'node:crypto';
import type { Context, Next } from 'koa';
import { type KeyRing, secretKey } from '../core/crypto/keys.ts';
import { safeEqual } from '../core/crypto/random.ts';
import { AppError, isAppError } from '../core/errors.ts';
import { cspSource, escapeHtml as e, listenerOrigin, sendHtml } from '../core/http/html.ts';
import { csrfField, htmlPage, secretBox, table, when } from '../core/http/page-kit.ts';
import { firstValue } from '../core/http/params.ts';
import type { Registrar } from '../core/http/routes.ts';
import { ENTERPRISE_USER } from './enterprise.ts';
import type { SetupLinksService } from './setup-links.ts';
import { type DirectoryType, isDirectoryType } from './types.ts';

export const SETUP_PAGE_PREFIX = '/setup';

/** The providers in the order the page offers them, with the name an administrator knows. */
const PROVIDERS: Array<{ type: DirectoryType; label: string }> = [
  { type: 'okta-scim-v2', label: 'Okta' },
  { type: 'azure-scim-v2', label: 'Microsoft Entra ID' },
  { type: 'onelogin-scim-v2', label: 'OneLogin' },
  { type: 'jumpcloud-scim-v2', label: 'JumpCloud' },
  { type: 'google', label: 'Google Workspace' },
  { type: 'generic-scim-v2', label: 'Another identity provider (SCIM 2.0)' },
];
const labelOf = (t: string) => PROVIDERS.find((p) => p.type === t)?.label ?? t;

/** Where each provider takes the base URL and the secret, and what else to set there. */
const STEPS: Record<Exclude<DirectoryType, 'google'>, string[]> = {
  'okta-scim-v2': [
    'In the Okta Admin Console, open <strong>Applications → Applications</strong> and the application of this product (or create a SAML or OIDC application for it).',
    'On <strong>General</strong>, edit <strong>App Settings</strong>, select <strong>SCIM</strong> as the provisioning method and save.',
    'On <strong>Provisioning → Integration</strong>: paste the SCIM base URL into <strong>SCIM connector base URL</strong>, set <strong>Unique identifier field for users</strong> to <code>userName</code>, tick <strong>Push New Users</strong>, <strong>Push Profile Updates</strong> and <strong>Push Groups</strong>, choose <strong>HTTP Header</strong> as the authentication mode and paste the bearer secret as the token. <strong>Test Connector Configuration</strong>, then save.',
    'On <strong>Provisioning → To App</strong>, enable <strong>Create Users</strong>, <strong>Update User Attributes</strong> and <strong>Deactivate Users</strong>.',
    'Assign people and groups on <strong>Assignments</strong>, and the groups to push on <strong>Push Groups</strong>.',
  ],
  'azure-scim-v2': [
    'In the Microsoft Entra admin center, open <strong>Enterprise applications</strong> and the application of this product (or a new non-gallery application).',
    'Open <strong>Provisioning</strong>, set <strong>Provisioning Mode</strong> to <strong>Automatic</strong>.',
    'Paste the SCIM base URL into <strong>Tenant URL</strong> (keep <code>?aadOptscim062020</code> at its end) and the bearer secret into <strong>Secret Token</strong>. <strong>Test Connection</strong>, then save.',
    'Under <strong>Mappings</strong>, check the attributes below; add the enterprise extension attributes you want (department, manager, …).',
    'Assign users and groups to the application, then turn <strong>Provisioning Status</strong> on.',
  ],
  'onelogin-scim-v2': [
    'In OneLogin, open <strong>Applications</strong> and add the <strong>SCIM Provisioner with SAML (SCIM v2 Enterprise)</strong> application (or open the product’s application).',
    'On <strong>Configuration</strong>: paste the SCIM base URL into <strong>SCIM Base URL</strong> and the bearer secret into <strong>SCIM Bearer Token</strong>; keep the default <strong>SCIM JSON Template</strong> (it maps the attributes below). Click <strong>Enable</strong> under API Connection, then save.',
    'On <strong>Provisioning</strong>, tick <strong>Enable provisioning</strong> and choose what happens when users are deleted or suspended.',
    'Assign users (and map roles to groups on <strong>Rules</strong>), then save.',
  ],
  'jumpcloud-scim-v2': [
    'In the JumpCloud Admin Portal, open <strong>SSO Applications</strong> and the application of this product (or a <strong>Custom Application</strong> with SCIM).',
    'On <strong>Identity Management</strong>, choose <strong>SCIM 2.0</strong>, paste the SCIM base URL into <strong>Base URL</strong> and the bearer secret into <strong>Token Key</strong>; enter a test user’s email and <strong>Test Connection</strong>.',
    'Activate the integration, tick <strong>Group Management</strong> if groups should follow, then save.',
    'Bind user groups to the application on <strong>User Groups</strong>.',
  ],
  'generic-scim-v2': [
    'In your identity provider, add a SCIM 2.0 provisioning target (an “app” or “connector”).',
    'Use the SCIM base URL as its base (or tenant) URL: users go to <code>/Users</code>, groups to <code>/Groups</code>; discovery is at <code>/ServiceProviderConfig</code>, <code>/Schemas</code> and <code>/ResourceTypes</code>.',
    'Authenticate with the bearer secret: <code>Authorization: Bearer &lt;secret&gt;</code>.',
    'Map the attributes below, then assign users and groups.',
  ],
};

/** What gatehouse reads from a user, for every SCIM provider's mapping screen. */
const MAPPING: Array<[string, string]> = [
  ['userName', 'the user’s unique name, usually the work email (required)'],
  ['name.givenName', 'first name'],
  ['name.familyName', 'last name'],
  ['emails[type eq "work"].value (primary)', 'email'],
  ['active', 'whether the user may sign in'],
  ['externalId', 'the identity provider’s own id of the user'],
  [`${ENTERPRISE_USER}:department`, 'department (also employeeNumber, costCenter, organization, division, manager)'],
];

/** CSRF tokens bound to the link: an HMAC of its token (the current key signs, every key verifies). */
function csrfTokens(ring: KeyRing) {
  const mac = (key: Buffer, token: string) =>
    createHmac('sha256', secretKey(key)).update(`setup-page\u0000${token}`).digest('base64url');
  return {
    issue: (token: string) => mac(ring.current.key, token),
    check: (token: string, value: unknown) =>
      typeof value === 'string' && ring.all.map((k) => safeEqual(mac(k.key, token), value)).some(Boolean),
  };
}

interface PageInput {
  nonce: string;
  title: string;
  body: string;
  notice?: string | undefined;
}

function layout(p: PageInput): string {
  return htmlPage({
    ...p,
    site: 'directory setup',
    header: '<header><span class="brand">Directory setup</span></header>',
  });
}

/** Result messages after a redirect (`?done=`): a fixed list, so a link cannot put words on the page. */
const NOTICES: Record<string, string> = {
  created: 'The directory was created. Reveal its secret below to configure your identity provider.',
};

type Connection = Awaited<ReturnType<SetupLinksService['setup']['connection']>>;
type DirectoryView = Awaited<ReturnType<SetupLinksService['setup']['get']>>;

function connectionPanel(c: Connection): string {
  const a = c.activity;
  const lastRequest = a
    ? `${when(a.last_request_at)}: <code>${e(a.last_method)} /${e(a.last_resource)}</code>, answered ${a.last_status}`
    : 'No request received yet.';
  const lastError =
    a?.last_error_at && a.last_error_status !== null
      ? `${when(a.last_error_at)}: ${a.last_error_status} ${e(a.last_error ?? '')}`
      : 'None.';
  return `<section class="card" aria-labelledby="connection">
<h2 id="connection">Connection</h2>
<dl>
<dt>Last request received</dt><dd>${lastRequest}</dd>
<dt>Users</dt><dd>${c.users}</dd>
<dt>Groups</dt><dd>${c.groups}</dd>
<dt>Last change</dt><dd>${c.lastChange ? `${when(c.lastChange.at)}: <code>${e(c.lastChange.event)}</code>` : 'None yet.'}</dd>
<dt>Last refused request</dt><dd>${lastError}</dd>
</dl>
<p><a href="">Refresh</a></p>
</section>`;
}

/**
 * Registers the page's routes on the public listener (the group's guard checks the link: `setupPageGuard`).
 * Long: the two pages and their three forms share the link's token, the CSRF check and the renderer,
 * which the closure binds once.
 */
export function setupPageRoutes(
  r: Registrar,
  s: { setupLinks: SetupLinksService; csrfRing: KeyRing; externalUrl: string },
): void {
  // The origins the page is served from: the links' (`dsync.external_url`, as the browser sees it
  // behind a proxy) and this listener's own.
  const origins = (ctx: Context) =>
    [...new Set([cspSource(s.externalUrl), cspSource(listenerOrigin(ctx))])].filter((x): x is string => !!x);
  const setup = () => s.setupLinks.setup;
  const csrf = csrfTokens(s.csrfRing);
  const base = `${SETUP_PAGE_PREFIX}/:token`;
  const token = (ctx: Context) => String((ctx.params as { token?: string }).token ?? '');
  const home = (ctx: Context) => `${SETUP_PAGE_PREFIX}/${encodeURIComponent(token(ctx))}`;
  const dirPath = (ctx: Context, id: string) => `${home(ctx)}/directories/${encodeURIComponent(id)}`;
  const form = (ctx: Context) => (ctx.request.body ?? {}) as Record<string, unknown>;
  const field = (ctx: Context, name: string) => firstValue(form(ctx)[name]) ?? '';
  const render = (ctx: Context, title: string, body: string, status = 200, notice?: string) =>
    sendHtml(ctx, (nonce) => layout({ nonce, title, body, notice }), { formAction: origins(ctx) }, status);

  /** A POST of this page: from this origin (when the browser says), with the link's CSRF token. */
  function checkPost(ctx: Context): void {
    const origin = ctx.get('origin');
    if (origin && origin !== 'null' && !origins(ctx).includes(origin))
      throw new AppError({ status: 403, code: 'forbidden', description: 'This form can only be sent from this page.' });
    if (!csrf.check(token(ctx), field(ctx, 'csrf')))
      throw new AppError({
        status: 403,
        code: 'forbidden',
        description: 'The form expired: reload the page and try again.',
      });
  }

  async function overview(ctx: Context, status = 200, error?: string) {
    const link = await s.setupLinks.getByToken(token(ctx));
    const dirs = await setup().list(token(ctx));
    const rows = dirs.map((d) => [
      `<a href="${e(dirPath(ctx, d.id))}">${e(d.name || labelOf(d.type))}</a>`,
      e(labelOf(d.type)),
      d.deactivated ? 'deactivated' : 'active',
    ]);
    const options = PROVIDERS.map(
      (p, i) =>
        `<label class="check"><input type="radio" name="type" value="${e(p.type)}"${i === 0 ? ' required' : ''}> ${e(p.label)}</label>`,
    ).join('\n');
    const body = `<p>Connect your company’s directory to <strong>${e(link.product)}</strong>: pick your identity provider, create the directory, and copy what the next page gives you into your identity provider. This link works until ${when(new Date(link.validTill))}.</p>
${error ? `<p class="error" role="alert">${e(error)}</p>` : ''}
<h2>Your directories</h2>
${table('Directories of this link', ['Directory', 'Identity provider', 'Status'], rows, 'No directory yet: create one below.')}
<h2>Create a directory</h2>
<form method="post" action="${e(`${home(ctx)}/directories`)}">
${csrfField(csrf.issue(token(ctx)))}
<fieldset><legend>Identity provider</legend>
${options}
</fieldset>
<label for="google_domain">Google Workspace domain <span class="hint">Only for Google Workspace, e.g. example.com</span></label>
<input type="text" id="google_domain" name="google_domain" autocomplete="off">
<div class="actions"><button type="submit">Create the directory</button></div>
</form>`;
    render(ctx, 'Set up directory sync', body, status);
  }

  async function directory(ctx: Context, o: { secret?: string; notice?: string } = {}) {
    const id = String((ctx.params as { id?: string }).id ?? '');
    const [d, c]: [DirectoryView, Connection] = await Promise.all([
      setup().get(token(ctx), id),
      setup().connection(token(ctx), id),
    ]);
    const t = token(ctx);
    const here = dirPath(ctx, d.id);
    const steps = d.type === 'google' ? [] : STEPS[d.type as Exclude<DirectoryType, 'google'>];
    const scim =
      d.type === 'google'
        ? `<h2>Authorize</h2>
<p>Google Workspace directories are read by this service through Google’s Admin SDK: a super administrator of <strong>${e(d.google_domain || 'your domain')}</strong> authorizes it once.</p>
<p>Status: <strong>${d.google_authorized ? 'authorized' : 'not authorized yet'}</strong></p>
${d.google_authorization_url ? `<p><a class="button" href="${e(d.google_authorization_url)}">${d.google_authorized ? 'Authorize again' : 'Authorize with Google'}</a></p>` : ''}`
        : `<h2>SCIM connection</h2>
<dl>
<dt>SCIM base URL</dt><dd><code id="scim-url">${e(d.scim.endpoint ?? '')}</code>
<button type="button" class="secondary" data-copy="scim-url" hidden>Copy SCIM base URL</button></dd>
<dt>Authentication</dt><dd>Bearer token: the secret below</dd>
</dl>
${
  o.secret
    ? `${secretBox('scim-secret', 'Bearer secret', o.secret, true)}
<p class="muted">Copy it now: it is shown again only when you reveal it again.</p>`
    : `<form method="post" action="${e(`${here}/reveal`)}">${csrfField(csrf.issue(t))}<button type="submit">Reveal the bearer secret</button></form>`
}
<h2>Steps in ${e(labelOf(d.type))}</h2>
<ol>${steps.map((x) => `<li>${x}</li>`).join('\n')}</ol>
<h2>Attributes</h2>
${table(
  'What the directory reads from a user',
  ['SCIM attribute', 'Used as'],
  MAPPING.map(([a, u]) => [`<code>${e(a)}</code>`, e(u)]),
)}
<h2>Rotate the secret</h2>
<form method="post" action="${e(`${here}/rotate`)}">
${csrfField(csrf.issue(t))}
<label class="check"><input type="checkbox" name="confirm" value="yes" required> The old secret stops working at once: I will paste the new one into ${e(labelOf(d.type))}.</label>
<div class="actions"><button type="submit" class="danger">Rotate the secret</button></div>
</form>`;
    const body = `<p><a href="${e(home(ctx))}">All directories of this link</a></p>
<p>Identity provider: <strong>${e(labelOf(d.type))}</strong> · Status: <strong>${d.deactivated ? 'deactivated' : 'active'}</strong></p>
<div class="cards">${connectionPanel(c)}</div>
${scim}`;
    const doneKey = typeof ctx.query.done === 'string' ? ctx.query.done : '';
    render(ctx, d.name || labelOf(d.type), body, 200, o.notice ?? NOTICES[doneKey]);
  }

  r.get(base, (ctx) => overview(ctx));
  r.post(`${base}/directories`, async (ctx) => {
    checkPost(ctx);
    const type = field(ctx, 'type');
    if (!isDirectoryType(type)) return overview(ctx, 400, 'Pick your identity provider.');
    const domain = field(ctx, 'google_domain').trim();
    const created = await setup().create(token(ctx), {
      type,
      ...(type === 'google' && domain ? { google_domain: domain } : {}),
    });
    ctx.status = 303;
    ctx.redirect(`${dirPath(ctx, created.id)}?done=created`);
  });
  r.get(`${base}/directories/:id`, (ctx) => directory(ctx));
  r.post(`${base}/directories/:id/reveal`, async (ctx) => {
    checkPost(ctx);
    const id = String((ctx.params as { id?: string }).id ?? '');
    const d = await setup().get(token(ctx), id);
    await setup().revealed(token(ctx), id);
    await directory(ctx, { secret: d.scim.secret });
  });
  r.post(`${base}/directories/:id/rotate`, async (ctx) => {
    checkPost(ctx);
    if (field(ctx, 'confirm') !== 'yes') return directory(ctx, { notice: 'Tick the box to confirm the rotation.' });
    const d = await setup().rotate(token(ctx), String((ctx.params as { id?: string }).id ?? ''));
    await directory(ctx, {
      secret: d.scim.secret,
      notice: 'The secret was rotated: paste the new one into your identity provider.',
    });
  });
}

/**
 * The page's guard: the link's token in the path must be valid. A refused link, and any error of
 * the page, is an HTML page with the status (never JSON: a person opened it).
 */
export function setupPageGuard(s: { setupLinks: SetupLinksService }) {
  return async function setupPage(ctx: Context, next: Next) {
    try {
      await s.setupLinks.getByToken((ctx.params as { token?: string }).token);
      await next();
    } catch (err) {
      if (!isAppError(err)) throw err;
      const status = err.status;
      const message =
        status === 401
          ? 'This setup link has expired. Ask for a new one.'
          : status === 404
            ? 'This setup link does not exist, or it was revoked. Ask for a new one.'
            : err.description || 'The request could not be completed.';
      const title = status === 401 || status === 404 ? 'Setup link not valid' : 'Something went wrong';
      sendHtml(
        ctx,
        (nonce) => layout({ nonce, title, body: `<p class="error" role="alert">${e(message)}</p>` }),
        {},
        status,
      );
    }
  };
}
