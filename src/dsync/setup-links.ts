/**
 * Directory-sync setup links (Jackson's SetupLinkController for `service: 'dsync'`): the operator
 * creates a link for a tenant+product through the Api-Key API and hands its URL to the tenant's IT
 * administrator, who then configures the tenant's directories with the link's token alone (the
 * `/api/setup/{token}/directory-sync` routes on the public listener): create a directory (SCIM or
 * Google), read it (SCIM endpoint and secret), deactivate or delete it, start the Google
 * authorization. A link is scoped to its tenant+product, expires (`expiryDays`, default 3, as
 * Jackson), and is revoked by deleting it (or by `regenerate`).
 *
 * Differences from Jackson, on purpose:
 * - a link only reaches the directories of its own tenant+product (Jackson's per-directory setup
 *   routes did not check it);
 * - `GET /api/setup/{token}` leaves out `webhook_url` and `webhook_secret` as well as `tenant`
 *   (they are the application's, not the tenant administrator's);
 * - the token is stored as a SHA-256 for lookup and sealed for display (the API returns the URL).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Audit } from '../core/audit/events.ts';
import type { Clock } from '../core/clock.ts';
import { open, seal } from '../core/crypto/aead.ts';
import type { KeyRing } from '../core/crypto/keys.ts';
import { setActor } from '../core/observability/scope.ts';
import type { DirectoriesService } from './directories/service.ts';
import { dsyncError } from './errors.ts';
import type { Db } from './tables.ts';
import { type DirectoryType, isDirectoryType, type PageParams, page } from './types.ts';

/** Jackson's SetupLink for `service: 'dsync'`. */
export interface SetupLink {
  setupID: string;
  tenant: string;
  product: string;
  service: 'dsync';
  name: string;
  /** Expiry, milliseconds since the epoch. */
  validTill: number;
  url: string;
  webhook_url: string;
  webhook_secret: string;
}

/** A verified setup link as the Google authorize route needs it (same shape as its other proofs). */
export interface SetupGrant {
  directoryId: string;
  replaceWorkspace: boolean;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';
const hash = (token: string) => createHash('sha256').update(token).digest('base64url');
/** Jackson's setupID: a digest of tenant, product and service. */
const setupId = (tenant: string, product: string) =>
  createHash('sha256').update(`${tenant}:${product}:dsync`).digest('hex').slice(0, 40);

type Row = {
  id: string;
  tenant: string;
  product: string;
  name: string;
  token: string;
  webhook_url: string;
  webhook_secret: string;
  valid_till: Date;
};

/**
 * Setup links: the management API's operations on them, and what a tenant's administrator does
 * with one (`setup`: the directories of one tenant and product).
 * Long: both sides share the sealed token, the row look-ups and the audit of a link's use.
 */
export function createSetupLinksService(o: {
  db: Db;
  clock: Clock;
  ring: KeyRing;
  directories: DirectoriesService;
  externalUrl: string;
  expiryDays?: number;
  pageLimit?: number;
  audit: Audit;
}) {
  const aad = (id: string, f: string) => `dsync-setup:${id}:${f}`;
  const toLink = (r: Row): SetupLink => ({
    setupID: r.id,
    tenant: r.tenant,
    product: r.product,
    service: 'dsync',
    name: r.name,
    validTill: r.valid_till.getTime(),
    url: `${o.externalUrl}/setup/${open(o.ring, r.token, aad(r.id, 'token'))}`,
    webhook_url: r.webhook_url,
    webhook_secret: open(o.ring, r.webhook_secret, aad(r.id, 'webhook_secret')),
  });
  const expired = (r: Row) => r.valid_till.getTime() < o.clock.now().getTime();
  const notFound = () => dsyncError(404, 'Setup link is not found');

  const select = () =>
    o.db
      .selectFrom('dsync_setup_links')
      .select(['id', 'tenant', 'product', 'name', 'token', 'webhook_url', 'webhook_secret', 'valid_till']);

  /** Jackson's `create`: the existing unexpired link of the tenant+product unless `regenerate`. */
  async function create(body: Record<string, unknown>): Promise<SetupLink> {
    const { tenant, product, name, webhook_url, webhook_secret, expiryDays, regenerate } = body ?? {};
    if (typeof tenant === 'string' && tenant.includes(':'))
      throw dsyncError(400, 'tenant cannot contain the character :');
    if (typeof product === 'string' && product.includes(':'))
      throw dsyncError(400, 'product cannot contain the character :');
    if (!nonEmpty(tenant) || !nonEmpty(product)) throw dsyncError(400, 'Must provide tenant and product');
    if (!nonEmpty(webhook_url) || !nonEmpty(webhook_secret))
      throw dsyncError(400, 'Must provide webhook_url and webhook_secret');
    if (!URL.canParse(webhook_url) || !/^https?:$/.test(new URL(webhook_url).protocol))
      throw dsyncError(400, 'Invalid value for webhook_url: it must be an http(s) URL.');
    const existing = await select().where('tenant', '=', tenant).where('product', '=', product).executeTakeFirst();
    if (existing && regenerate !== true && !expired(existing)) return toLink(existing);
    const days = typeof expiryDays === 'number' && expiryDays > 0 ? expiryDays : (o.expiryDays ?? 3);
    const id = setupId(tenant, product);
    const token = randomBytes(24).toString('hex');
    const row = {
      id,
      tenant,
      product,
      service: 'dsync',
      name: typeof name === 'string' ? name : '',
      token_hash: hash(token),
      token: seal(o.ring, token, aad(id, 'token')),
      webhook_url,
      webhook_secret: seal(o.ring, webhook_secret, aad(id, 'webhook_secret')),
      valid_till: new Date(o.clock.now().getTime() + Math.min(days, 3650) * DAY_MS),
    };
    // Regenerating (or replacing an expired link) revokes the previous token.
    await o.db
      .insertInto('dsync_setup_links')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['tenant', 'product', 'service']).doUpdateSet({
          name: row.name,
          token_hash: row.token_hash,
          token: row.token,
          webhook_url: row.webhook_url,
          webhook_secret: row.webhook_secret,
          valid_till: row.valid_till,
          created_at: o.clock.now(),
        }),
      )
      .execute();
    return toLink(row);
  }

  /** By id: 400 without one, 404 when unknown. */
  async function get(id: unknown): Promise<SetupLink> {
    if (!nonEmpty(id)) throw dsyncError(400, 'Missing setup link id');
    const r = await select().where('id', '=', id).executeTakeFirst();
    if (!r) throw notFound();
    return toLink(r);
  }

  /** The link of a tenant+product (404 when there is none). */
  async function byTenantAndProduct(tenant: unknown, product: unknown): Promise<SetupLink> {
    if (!nonEmpty(tenant) || !nonEmpty(product)) throw dsyncError(400, 'Must provide tenant and product');
    const r = await select().where('tenant', '=', tenant).where('product', '=', product).executeTakeFirst();
    if (!r) throw notFound();
    return toLink(r);
  }

  /** Jackson's `filterBy({product, service})` (`all`: every link, `filterBy({service})`): `{data, pageToken}`, newest first. */
  async function byProduct(
    product: unknown,
    p: PageParams = {},
    opts: { all?: boolean } = {},
  ): Promise<{ data: SetupLink[]; pageToken: undefined }> {
    if (!opts.all && !nonEmpty(product)) throw dsyncError(400, 'Please provide a product');
    const { offset, limit } = page(p, o.pageLimit);
    let q = select();
    if (!opts.all) q = q.where('product', '=', product as string);
    const rows = await q.orderBy('created_at', 'desc').orderBy('id').offset(offset).limit(limit).execute();
    return { data: rows.map(toLink), pageToken: undefined };
  }

  /** Revokes the link (by id, or by tenant+product). Unknown links are not an error (Jackson). */
  async function remove(q: { id?: unknown; tenant?: unknown; product?: unknown }): Promise<void> {
    if (nonEmpty(q.id)) {
      await o.db.deleteFrom('dsync_setup_links').where('id', '=', q.id).execute();
      return;
    }
    if (nonEmpty(q.tenant) && nonEmpty(q.product)) {
      await o.db
        .deleteFrom('dsync_setup_links')
        .where('tenant', '=', q.tenant)
        .where('product', '=', q.product)
        .execute();
      return;
    }
    throw dsyncError(400, 'Please provide id, or tenant and product');
  }

  /** Jackson's `getByToken`: 400 without a token, 404 unknown (or revoked), 401 expired. */
  async function getByToken(token: unknown): Promise<SetupLink> {
    if (!nonEmpty(token)) throw dsyncError(400, 'Missing setup link token');
    const r = await select().where('token_hash', '=', hash(token)).executeTakeFirst();
    if (!r) throw notFound();
    if (expired(r)) throw dsyncError(401, 'Setup link is expired');
    return toLink(r);
  }

  /** A directory of the link's tenant+product (404 for any other, so ids of other tenants stay unknown). */
  async function directoryOf(link: SetupLink, directoryId: unknown) {
    const d = nonEmpty(directoryId) ? await o.directories.load(directoryId) : undefined;
    if (!d || d.tenant !== link.tenant || d.product !== link.product)
      throw dsyncError(404, 'Directory configuration not found.');
    return d;
  }

  // ---- what the tenant's administrator can do with the token ------------------------------

  /**
   * A change made with a setup link, after it succeeded (the link is also the actor of the change's
   * own directory events: `actingAs` before the change).
   */
  const actingAs = (link: SetupLink) => setActor({ kind: 'setup_link', id: link.setupID });
  async function used(link: SetupLink, action: string, directoryId?: string) {
    await o.audit.record(o.db, {
      type: 'dsync.setup_link.used',
      target: { kind: 'setup_link', id: link.setupID },
      details: { action, directory: directoryId, tenant: link.tenant, product: link.product },
    });
  }

  const setup = {
    /** `GET /api/setup/{token}`: the link without tenant and the application's webhook. */
    async describe(token: unknown) {
      const { tenant: _t, webhook_url: _u, webhook_secret: _s, ...rest } = await getByToken(token);
      return rest;
    },
    /** The tenant's directories: `[{id, type, name, deactivated}]`, newest first. */
    async list(token: unknown) {
      const link = await getByToken(token);
      const all = await o.directories.byTenantAndProduct(link.tenant, link.product);
      return all.map((d) => ({ id: d.id, type: d.type, name: d.name, deactivated: d.deactivated }));
    },
    /** Creates a directory of the link's tenant+product with the link's name and webhook: `{id}`. */
    async create(token: unknown, body: Record<string, unknown>) {
      const link = await getByToken(token);
      const type = body?.type ?? 'generic-scim-v2';
      if (!isDirectoryType(type)) throw dsyncError(400, 'Invalid directory type.');
      actingAs(link);
      const d = await o.directories.create({
        type: type as DirectoryType,
        ...(nonEmpty(body?.google_domain) ? { google_domain: body.google_domain } : {}),
        ...(link.name ? { name: link.name } : {}),
        tenant: link.tenant,
        product: link.product,
        webhook_url: link.webhook_url,
        webhook_secret: link.webhook_secret,
      });
      await used(link, 'create_directory', d.id);
      return { id: d.id };
    },
    /** One directory: what the administrator needs to configure the identity provider. */
    async get(token: unknown, directoryId: unknown) {
      const link = await getByToken(token);
      const d = await o.directories.get((await directoryOf(link, directoryId)).id);
      // The administrator starts the Google authorization with the link's own token as the proof.
      let authorize = d.google_authorization_url;
      if (authorize && typeof token === 'string') {
        const u = new URL(authorize);
        u.searchParams.set('directoryId', d.id);
        u.searchParams.set('token', token);
        authorize = u.toString();
      }
      return {
        id: d.id,
        type: d.type,
        name: d.name,
        deactivated: d.deactivated,
        scim: d.scim,
        google_domain: d.google_domain,
        google_authorized: Boolean(d.google_access_token && d.google_refresh_token),
        google_authorization_url: authorize,
      };
    },
    /** `{deactivated}` only. */
    async update(token: unknown, directoryId: unknown, body: Record<string, unknown>) {
      const link = await getByToken(token);
      const d = await directoryOf(link, directoryId);
      actingAs(link);
      const v = body?.deactivated;
      await o.directories.update(d.id, { deactivated: !(v === false || v === 'false') });
      await used(link, 'update_directory', d.id);
    },
    async remove(token: unknown, directoryId: unknown) {
      const link = await getByToken(token);
      const d = await directoryOf(link, directoryId);
      actingAs(link);
      await o.directories.remove(d.id);
      await used(link, 'delete_directory', d.id);
    },
    /** A new SCIM secret for the directory (the old one stops working): the directory as `get` gives it. */
    async rotate(token: unknown, directoryId: unknown) {
      const link = await getByToken(token);
      const d = await directoryOf(link, directoryId);
      actingAs(link);
      await o.directories.rotateScimSecret(d.id);
      await used(link, 'rotate_scim_secret', d.id);
      return setup.get(token, d.id);
    },
    /** Records that the administrator revealed the directory's SCIM secret (the page shows it on a POST only). */
    async revealed(token: unknown, directoryId: unknown) {
      const link = await getByToken(token);
      const d = await directoryOf(link, directoryId);
      await used(link, 'reveal_scim_secret', d.id);
    },
    /**
     * What the directory has received: its users and groups, its last change (event), and the last
     * SCIM request and refused request (scim/activity.ts).
     */
    async connection(token: unknown, directoryId: unknown) {
      const link = await getByToken(token);
      const d = await directoryOf(link, directoryId);
      const count = async (table: 'dsync_users' | 'dsync_groups') =>
        Number(
          (
            await o.db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .where('directory_id', '=', d.id)
              .executeTakeFirst()
          )?.n ?? 0,
        );
      const [users, groups, last, activity] = await Promise.all([
        count('dsync_users'),
        count('dsync_groups'),
        o.db
          .selectFrom('dsync_events')
          .select(['event', 'created_at'])
          .where('directory_id', '=', d.id)
          .orderBy('seq', 'desc')
          .limit(1)
          .executeTakeFirst(),
        o.db.selectFrom('dsync_scim_activity').selectAll().where('directory_id', '=', d.id).executeTakeFirst(),
      ]);
      return { users, groups, lastChange: last ? { event: last.event, at: last.created_at } : undefined, activity };
    },
  };

  /**
   * A proof for the Google authorize route: a valid (unexpired, unrevoked) setup-link token whose
   * tenant+product owns the directory. Same signature as the route's other verifiers: the grant,
   * or undefined (never throws), so it can be added to their list.
   */
  async function verifyForDirectory(directoryId: string, token: string): Promise<SetupGrant | undefined> {
    try {
      const link = await getByToken(token);
      const d = await directoryOf(link, directoryId);
      return { directoryId: d.id, replaceWorkspace: false };
    } catch {
      return undefined;
    }
  }

  return { create, get, byTenantAndProduct, byProduct, remove, getByToken, setup, verifyForDirectory };
}

export type SetupLinksService = ReturnType<typeof createSetupLinksService>;
