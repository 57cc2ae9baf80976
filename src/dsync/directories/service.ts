/**
 * Directories (Jackson DirectoryConfig). Messages and codes are Jackson's.
 * Secrets (SCIM bearer secret, webhook secret, cloud tokens) are sealed at rest with the `dsync`
 * key ring and opened on read, because Jackson's record returns them.
 */
import { randomUUID } from 'node:crypto';
import type { Audit } from '../../core/audit/events.ts';
import { keepNewest } from '../../core/bounded.ts';
import type { Clock } from '../../core/clock.ts';
import { open, seal } from '../../core/crypto/aead.ts';
import type { KeyRing } from '../../core/crypto/keys.ts';
import { randomToken } from '../../core/crypto/random.ts';
import type { ChangeFeed } from '../../core/db/changes.ts';
import { withTx } from '../../core/db/tx.ts';
import { dsyncError, dsyncMessage } from '../errors.ts';
import type { LifecycleType } from '../events/lifecycle.ts';
import * as store from '../store/directories.ts';
import type { Db, Executor } from '../tables.ts';
import {
  type Directory,
  type DirectoryRecord,
  isDirectoryType,
  isScimType,
  isUuid,
  type PageParams,
  page,
  type Scope,
} from '../types.ts';
import { createDirectorySchema, describeIssue, type UpdateDirectoryInput, updateDirectorySchema } from './schemas.ts';
import { directoryOf, type SecretField } from './stored.ts';

export interface DirectoriesOptions {
  db: Db;
  clock: Clock;
  ring: KeyRing;
  /** `dsync.external_url`, without a trailing slash */
  externalUrl: string;
  /** Jackson's `scimPath` (`/api/scim/v2.0`) */
  scimPath: string;
  googleAuthorizePath: string;
  /** Queues a connection lifecycle event in the change's transaction (events/lifecycle.ts). */
  lifecycle?: (trx: Executor, type: LifecycleType, d: Directory) => Promise<void>;
  /** Refuses a webhook URL the address policy forbids (throws a message); called before storing. */
  checkWebhookUrl?: (url: string) => Promise<string | undefined>;
  /** `dsync.page_limit` (Jackson's `db.pageLimit`) */
  pageLimit?: number;
  /** Change notifications: with them, `loadKept` keeps directory rows in memory (see there). */
  changes?: ChangeFeed | undefined;
  /** Records audit events (rows with `audit.enabled`). */
  audit: Audit;
}

/** Directory rows kept in memory per process for SCIM requests (the oldest go first). */
const DIRECTORY_CACHE_SIZE = 10_000;

const missing = () => dsyncError(400, 'Missing required parameters.');
/** Chosen groups once each, compared case-insensitively (emails are). */
const dedupe = (groups: string[]) => [...new Map(groups.map((g) => [g.toLowerCase(), g])).values()];
const notFound = () => dsyncError(404, 'Directory configuration not found.');
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/**
 * Directories: their configuration, secrets, Google tokens and the per-process cache of their rows.
 * Long: every operation reads and writes through the same sealed-field mapping (`fromRow`,
 * `record`), the same cache and its invalidation, and the same webhook and tenant checks.
 */
export function createDirectoriesService(o: DirectoriesOptions) {
  const sealField = (id: string, field: SecretField, v: string) => (v ? seal(o.ring, v, `dsync:${id}:${field}`) : '');
  const openField = (id: string, field: SecretField, v: string) => (v ? open(o.ring, v, `dsync:${id}:${field}`) : '');

  const fromRow = (r: store.DirectoryRow): Directory => directoryOf(r, openField);

  /** Jackson's record with the fields computed on read. */
  function record(d: Directory): DirectoryRecord {
    const scim: DirectoryRecord['scim'] = { path: d.scim.path, secret: d.scim.secret };
    if (scim.path) {
      // Opts Entra ID into its SCIM-compliant PATCH format (`?aadOptscim062020`).
      if (d.type === 'azure-scim-v2') scim.path = `${scim.path}/?aadOptscim062020`;
      scim.endpoint = `${o.externalUrl}${scim.path}`;
    }
    return {
      id: d.id,
      name: d.name,
      tenant: d.tenant,
      product: d.product,
      type: d.type,
      log_webhook_events: d.logWebhookEvents,
      webhook: { endpoint: d.webhook.endpoint, secret: d.webhook.secret },
      scim,
      ...(d.type === 'google'
        ? {
            google_domain: d.googleDomain,
            google_access_token: d.googleAccessToken,
            google_refresh_token: d.googleRefreshToken,
            google_groups: [...d.googleGroups],
          }
        : {}),
      deactivated: d.deactivated,
      ...(d.type === 'google' ? { google_authorization_url: `${o.externalUrl}${o.googleAuthorizePath}` } : {}),
    };
  }

  /** The directory, or undefined (also for ids that are not UUIDs). */
  async function load(id: string, db: Executor = o.db): Promise<Directory | undefined> {
    if (!isUuid(id)) return undefined;
    const r = await store.findDirectory(db, id.toLowerCase());
    return r && fromRow(r);
  }

  /**
   * Directory rows kept in memory for SCIM requests (authentication and the write's directory),
   * while the change feed is live: every change of a directory, from any process, notifies
   * `directory` and drops them all (a trigger, sql/0222; the event counter each write moves is not
   * a change), as does a change made here (counted when it starts and when it ends). Unknown ids
   * are not kept. The row is kept sealed: each request opens what it reads (the SCIM secret).
   */
  const kept = new Map<string, { version: string; row: store.DirectoryRow }>();
  let localChanges = 0;
  const changed = () => {
    localChanges++;
  };
  const versionNow = (feed: ChangeFeed) => `${feed.version('directory')}/${localChanges}`;

  async function loadKept(id: string): Promise<Directory | undefined> {
    const feed = o.changes;
    if (!feed?.live()) return load(id);
    if (!isUuid(id)) return undefined;
    const key = id.toLowerCase();
    const version = versionNow(feed);
    const k = kept.get(key);
    if (k?.version === version) return fromRow(k.row);
    const r = await store.findDirectory(o.db, key);
    kept.delete(key);
    if (r && versionNow(feed) === version) {
      keepNewest(kept, key, { version, row: r }, DIRECTORY_CACHE_SIZE);
    }
    return r && fromRow(r);
  }

  const emit = async (trx: Executor, type: LifecycleType, d: Directory) => o.lifecycle?.(trx, type, d);

  async function checkWebhook(url: string): Promise<void> {
    const problem = url ? await o.checkWebhookUrl?.(url) : undefined;
    if (problem) throw dsyncError(400, `Invalid value for webhook_url: ${problem}`);
  }

  /** Locks the directory row for the rest of the transaction (see store lockDirectory). */
  async function lock(trx: Executor, id: string): Promise<Directory | undefined> {
    const r = await store.lockDirectory(trx, id);
    return r && fromRow(r);
  }

  async function create(input: Record<string, unknown>): Promise<DirectoryRecord> {
    const { tenant, product } = input;
    if (!nonEmpty(tenant) || !nonEmpty(product)) throw missing();
    const type = input.type ?? 'generic-scim-v2';
    if (!isDirectoryType(type)) throw dsyncError(400, 'Invalid directory type.');
    if (tenant.includes(':')) throw dsyncError(400, 'tenant cannot contain the character :');
    if (product.includes(':')) throw dsyncError(400, 'product cannot contain the character :');
    const parsed = createDirectorySchema.safeParse(input);
    if (!parsed.success) throw dsyncError(400, describeIssue(parsed.error));
    const p = parsed.data;
    const id = randomUUID();
    const hasWebhook = nonEmpty(p.webhook_url) && nonEmpty(p.webhook_secret);
    const scim = isScimType(type);
    if (hasWebhook) await checkWebhook(p.webhook_url as string);
    const values: store.NewDirectoryRow = {
      id,
      name: p.name || `scim-${tenant}-${product}`,
      tenant,
      product,
      type,
      log_webhook_events: p.log_webhook_events ?? false,
      webhook_endpoint: hasWebhook ? (p.webhook_url as string) : '',
      webhook_secret: hasWebhook ? sealField(id, 'webhook_secret', p.webhook_secret as string) : '',
      scim_path: scim ? `${o.scimPath}/${id}` : '',
      // 16 CSPRNG bytes, base64url without padding: 22 characters, as Jackson's createRandomSecret(16).
      scim_secret: scim ? sealField(id, 'scim_secret', randomToken(16)) : '',
      google_domain: type === 'google' ? (p.google_domain ?? '') : '',
      google_access_token: type === 'google' ? sealField(id, 'google_access_token', p.google_access_token ?? '') : '',
      google_refresh_token:
        type === 'google' ? sealField(id, 'google_refresh_token', p.google_refresh_token ?? '') : '',
      google_groups: type === 'google' ? dedupe(p.google_groups ?? []) : [],
    };
    const created = await withTx(o.db, async (trx) => {
      const d = fromRow(await store.insertDirectory(trx, values));
      await emit(trx, 'dsync.created', d);
      await o.audit.record(trx, {
        type: 'dsync.directory.created',
        target: { kind: 'directory', id: d.id },
        details: { directory_type: d.type, tenant: d.tenant, product: d.product },
      });
      return d;
    });
    return record(created);
  }

  async function get(id: unknown): Promise<DirectoryRecord> {
    if (!nonEmpty(id)) throw missing();
    const d = await load(id);
    if (!d) throw notFound();
    return record(d);
  }

  /** Copies only the keys present in `input`; an unknown id is a 404 (Jackson wrote a broken record). */
  async function update(id: unknown, input: UpdateDirectoryInput): Promise<DirectoryRecord> {
    if (!nonEmpty(id)) throw missing();
    const parsed = updateDirectorySchema.safeParse(input ?? {});
    if (!parsed.success) throw dsyncError(400, describeIssue(parsed.error));
    const p = parsed.data;
    const current = await load(id);
    if (!current) throw notFound();
    const webhook = { endpoint: current.webhook.endpoint, secret: current.webhook.secret };
    if (p.webhook) Object.assign(webhook, { endpoint: p.webhook.endpoint ?? '', secret: p.webhook.secret ?? '' });
    if ('webhook_url' in p) webhook.endpoint = p.webhook_url || '';
    if ('webhook_secret' in p) webhook.secret = p.webhook_secret || '';
    if (webhook.endpoint !== current.webhook.endpoint) await checkWebhook(webhook.endpoint);
    const patch: store.DirectoryPatch = {
      ...(p.name !== undefined ? { name: p.name } : {}),
      ...(p.log_webhook_events !== undefined ? { log_webhook_events: p.log_webhook_events } : {}),
      ...(p.deactivated !== undefined ? { deactivated: p.deactivated } : {}),
      webhook_endpoint: webhook.endpoint,
      webhook_secret: sealField(current.id, 'webhook_secret', webhook.secret),
      ...(p.google_domain !== undefined ? { google_domain: p.google_domain } : {}),
      // A token set by hand has an unknown expiry: it is used until Google rejects it.
      ...(p.google_access_token !== undefined
        ? {
            google_access_token: sealField(current.id, 'google_access_token', p.google_access_token),
            google_access_token_expires_at: null,
          }
        : {}),
      ...(p.google_refresh_token !== undefined
        ? { google_refresh_token: sealField(current.id, 'google_refresh_token', p.google_refresh_token) }
        : {}),
      ...(p.google_groups !== undefined ? { google_groups: dedupe(p.google_groups) } : {}),
      updated_at: o.clock.now(),
    };
    changed();
    const updated = await withTx(o.db, async (trx) => {
      const row = await store.updateDirectory(trx, current.id, patch);
      if (!row) throw notFound();
      const d = fromRow(row);
      // Jackson: whenever `deactivated` is given, changed or not.
      if (p.deactivated !== undefined) await emit(trx, d.deactivated ? 'dsync.deactivated' : 'dsync.activated', d);
      await o.audit.record(trx, {
        type: 'dsync.directory.changed',
        target: { kind: 'directory', id: d.id },
        details: {
          fields: Object.keys(p).filter((k) => !/secret|token/.test(k)),
          webhook_changed: webhook.endpoint !== current.webhook.endpoint,
          deactivated: p.deactivated,
        },
      });
      return d;
    }).finally(changed);
    return record(updated);
  }

  /**
   * Gives a SCIM directory a new bearer secret (the old one stops working at once, in every process:
   * the directory cache is dropped); returns the record with the new secret. Cloud directories
   * (Google) have none: 400.
   */
  async function rotateScimSecret(id: unknown): Promise<DirectoryRecord> {
    if (!nonEmpty(id)) throw missing();
    const current = await load(id);
    if (!current) throw notFound();
    if (!current.scim.path) throw dsyncError(400, 'This directory has no SCIM secret.');
    changed();
    const updated = await withTx(o.db, async (trx) => {
      const row = await store.updateDirectory(trx, current.id, {
        scim_secret: sealField(current.id, 'scim_secret', randomToken(16)),
        updated_at: o.clock.now(),
      });
      if (!row) throw notFound();
      await o.audit.record(trx, {
        type: 'dsync.directory.changed',
        target: { kind: 'directory', id: current.id },
        details: { fields: ['scim_secret'], rotated: true },
      });
      return fromRow(row);
    }).finally(changed);
    return record(updated);
  }

  /**
   * Deletes the directory; its users, groups, memberships, events, queued deliveries and webhook
   * logs go with it (foreign keys).
   */
  async function remove(id: unknown): Promise<void> {
    if (!nonEmpty(id)) throw dsyncError(400, 'Missing required parameter.');
    if (!isUuid(id)) throw notFound();
    changed();
    await withTx(o.db, async (trx) => {
      const row = await store.deleteDirectory(trx, id.toLowerCase());
      if (!row) throw notFound();
      const d = fromRow(row);
      await emit(trx, 'dsync.deleted', d);
      await o.audit.record(trx, {
        type: 'dsync.directory.deleted',
        target: { kind: 'directory', id: d.id },
        details: { directory_type: d.type, tenant: d.tenant, product: d.product },
      });
    }).finally(changed);
  }

  /** The records of the directories the query selects. */
  const records = async (q: store.DirectoryQuery) =>
    (await store.listDirectories(o.db, q)).map((r) => record(fromRow(r)));

  async function byTenantAndProduct(tenant: unknown, product: unknown): Promise<DirectoryRecord[]> {
    if (!nonEmpty(tenant) || !nonEmpty(product)) throw missing();
    return records({ tenant, product });
  }

  async function list(p: PageParams = {}): Promise<DirectoryRecord[]> {
    return records(page(p, o.pageLimit));
  }

  /** `product` wins over `provider`; any directory type can be a provider here (Jackson: non-SCIM only). */
  async function filterBy(p: PageParams & { product?: unknown; provider?: unknown } = {}): Promise<DirectoryRecord[]> {
    const q = page(p, o.pageLimit);
    if (nonEmpty(p.product)) return records({ ...q, product: p.product });
    if (nonEmpty(p.provider)) return records({ ...q, type: p.provider });
    throw dsyncError(400, 'Please provide a product or provider.');
  }

  /**
   * The tenant+product (and directory) a management read is about: `tenant` and `product`, or the
   * directory's when only `directoryId` is given (Jackson's v1 routes). Throws 404/400 otherwise.
   */
  async function resolveScope(q: { tenant?: unknown; product?: unknown; directoryId?: unknown }): Promise<Scope> {
    const directoryId = nonEmpty(q.directoryId) ? q.directoryId : undefined;
    if (nonEmpty(q.tenant) && nonEmpty(q.product)) return { tenant: q.tenant, product: q.product, directoryId };
    if (directoryId) {
      const d = await load(directoryId);
      if (!d) throw dsyncMessage(404, 'Directory not found.');
      return { tenant: d.tenant, product: d.product, directoryId };
    }
    throw dsyncMessage(400, 'Please provide tenant and product, or directoryId.');
  }

  const count = () => store.countDirectories(o.db);

  /**
   * Stores the cloud tokens of a directory, sealed (the authorization callback, `setToken`, and a
   * refresh during a sync). `refreshToken` and `domain` are kept when not given. Undefined when the
   * directory does not exist.
   */
  async function setGoogleTokens(
    id: string,
    t: { accessToken: string; refreshToken?: string; expiresAt: Date | null; domain?: string; customerId?: string },
    db: Executor = o.db,
  ): Promise<Directory | undefined> {
    if (!isUuid(id)) return undefined;
    const key = id.toLowerCase();
    changed();
    const row = await store
      .updateDirectory(db, key, {
        google_access_token: sealField(key, 'google_access_token', t.accessToken),
        google_access_token_expires_at: t.expiresAt,
        ...(t.refreshToken !== undefined
          ? { google_refresh_token: sealField(key, 'google_refresh_token', t.refreshToken) }
          : {}),
        ...(t.domain !== undefined ? { google_domain: t.domain } : {}),
        ...(t.customerId !== undefined ? { google_customer_id: t.customerId } : {}),
        updated_at: o.clock.now(),
      })
      .finally(changed);
    return row && fromRow(row);
  }

  return {
    load,
    loadKept,
    lock,
    record,
    create,
    get,
    update,
    rotateScimSecret,
    remove,
    byTenantAndProduct,
    list,
    filterBy,
    resolveScope,
    count,
    setGoogleTokens,
  };
}

export type DirectoriesService = ReturnType<typeof createDirectoriesService>;
