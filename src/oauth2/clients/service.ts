/**
 * OAuth 2.0 client management (Hydra's client handler + persister rules): create, read, list,
 * replace, JSON Patch, lifespans, delete, and the secret check the token endpoint uses. Secrets are
 * hashed per `oauth2.hashers` and only ever returned by the write that set them; registration access
 * tokens are Hydra opaque `ory_at_` tokens of which only the HMAC signature is stored.
 */
import { randomUUID } from 'node:crypto';
import { keepNewest } from '../../core/bounded.ts';
import { paginationSecrets } from '../../core/config/load.ts';
import { generateOpaqueToken } from '../../core/crypto/hmac.ts';
import { keyRing } from '../../core/crypto/keys.ts';
import { withTx } from '../../core/db/tx.ts';
import { AppError, HERODOT, notFound } from '../../core/errors.ts';
import { keysetPage, type Page, parsePageQuery } from '../../core/pagination.ts';
import type { OAuth2Deps } from '../deps.ts';
import * as store from '../store/clients.ts';
import { deleteTokensOfClient } from '../store/token-families.ts';
import type { Executor } from '../tables.ts';
import { type Client, type ClientDraft, isPublicClient, type Lifespans, type StoredClient } from './model.ts';
import { checkClientOutbound } from './outbound.ts';
import { applyClientPatch } from './patch.ts';
import { clientBody, decodeBody, renderClient, toDraft } from './schemas.ts';
import { createSecretHasher, generateSecret } from './secrets.ts';
import { type DynamicBounds, type ValidationEnv, validateClient, validateDynamicClient } from './validate.ts';

/** A write's result: the client plus the values shown only once. */
export interface WrittenClient {
  client: Client;
  /** The plaintext secret, when this write set or generated it (never for `none` clients on create). */
  secret?: string | undefined;
  registrationToken?: string | undefined;
  registrationUri?: string | undefined;
}

export interface ClientListQuery {
  pageSize?: string | undefined;
  pageToken?: string | undefined;
  clientName?: string | undefined;
  owner?: string | undefined;
}

export type ClientService = ReturnType<typeof createClientService>;

const PAGE_KIND = 'oauth2_clients';
/** Clients kept in memory per process for authentication (see findStored). */
const CLIENT_CACHE_SIZE = 10_000;

const dbNotFound = () => notFound('', HERODOT.dbNotFound);

/**
 * OAuth 2.0 clients: the admin API's operations and those of dynamic registration, the token
 * endpoint's authentication, and the cache of stored clients (findStored).
 * Long: every operation validates through the same rules and writes through the same transaction,
 * secret hasher and cache, which the closure binds once.
 */
export function createClientService(
  core: Pick<OAuth2Deps, 'db' | 'config' | 'clock' | 'fetch' | 'fetchDynamic' | 'audit'> &
    Partial<Pick<OAuth2Deps, 'changes'>>,
) {
  const { db, config, clock } = core;
  /**
   * A write of clients in this process: the cache below is dropped when it starts and again when it
   * has committed, so that a request after the write's answer never reads the client from before
   * it (the trigger's NOTIFY, which other processes go by, arrives after the commit, not before).
   */
  const writing = async <T>(fn: (trx: Executor) => Promise<T>): Promise<T> => {
    core.changes?.bump('client');
    try {
      return await withTx(db, fn);
    } finally {
      core.changes?.bump('client');
    }
  };
  // Derived per call (cheap HKDF), so building the service never fails on a missing secret.
  const pageRing = () => keyRing(paginationSecrets(config), 'pagination');
  const hashers = config.oauth2.hashers;
  const env: ValidationEnv = {
    defaultScope: config.oidc.dynamic_client_registration.default_scope,
    subjectTypes: config.oidc.subject_identifiers.supported_types,
    accessTokenStrategy: config.strategies.access_token,
    dev: config.dev,
  };
  const dcr = config.oidc.dynamic_client_registration;
  const bounds: DynamicBounds = {
    allowedScope: dcr.allowed_scope ?? dcr.default_scope,
    allowedAudience: dcr.allowed_audience,
  };
  const secrets = createSecretHasher({ hashers, systemSecrets: () => config.secrets.system });

  /** Hydra rounds client timestamps to the second. */
  const now = () => new Date(Math.round(clock.now().getTime() / 1000) * 1000);
  const registrationUri = (id: string) =>
    new URL(`oauth2/register/${encodeURIComponent(id)}`, config.urls.self.public).toString();
  const newRegistrationToken = () => generateOpaqueToken('ory_at_', config.secrets.system);
  /**
   * The pure rules, then the network ones (address policy, sector identifier contents). A dynamic
   * write is bounded by `bounds`; `current` is the client it replaces (RFC 7592 PUT).
   */
  const validate = async (d: ClientDraft, dynamic: boolean, current?: Client): Promise<ClientDraft> => {
    const valid = dynamic ? validateDynamicClient(d, env, bounds, current) : validateClient(d, env);
    // An anonymous caller chose the URIs of a dynamically registered client: internal addresses are
    // refused unless the operator allowed them (operator-created clients keep Hydra's default).
    const strict = dynamic && !config.oidc.dynamic_client_registration.allow_internal_addresses;
    await checkClientOutbound(
      valid,
      strict ? core.fetchDynamic : core.fetch,
      strict || config.clients.http.disallow_private_ip_ranges,
      { opaqueErrors: dynamic },
    );
    return valid;
  };

  function toClient(valid: ClientDraft, created: Date, updated: Date): Client {
    const { client_secret: _secret, ...fields } = valid;
    return { ...fields, metadata: fields.metadata ?? {}, created_at: created, updated_at: updated };
  }

  /**
   * Registers a client. Dynamic registration refuses a chosen secret and always picks the id.
   * @throws 400 invalid_client_metadata / invalid_redirect_uri / invalid_request, 409 when the id is taken.
   */
  async function create(draft: ClientDraft, opts: { dynamic: boolean }): Promise<WrittenClient> {
    const d = { ...draft };
    if (opts.dynamic) {
      if (d.client_secret) {
        throw new AppError({
          status: 400,
          code: HERODOT.badRequest,
          description: 'It is not allowed to choose your own OAuth2 Client secret.',
        });
      }
      d.client_id = randomUUID();
    }
    const chosen = d.client_secret !== '';
    if (!chosen) d.client_secret = generateSecret();
    const valid = await validate(d, opts.dynamic);
    const pub = isPublicClient(valid);
    // A public client gets no secret of its own; one the admin chose is still kept hashed (as Hydra does).
    const secretHash =
      pub && !chosen
        ? null
        : chosen
          ? await secrets.hashChosen(valid.client_secret)
          : secrets.hashGenerated(valid.client_secret);
    const reg = newRegistrationToken();
    const at = now();
    const client = toClient({ ...valid, client_id: valid.client_id || randomUUID() }, at, at);
    await writing(async (trx) => {
      await store.insertClient(trx, {
        client,
        secretHash,
        registrationSignature: reg.signature,
        dynamic: opts.dynamic,
      });
      await core.audit.record(trx, {
        type: 'oauth2.client.created',
        target: { kind: 'client', id: client.client_id },
        details: { dynamic: !!opts.dynamic },
      });
    });
    return {
      client,
      secret: pub ? undefined : valid.client_secret,
      registrationToken: reg.token,
      registrationUri: registrationUri(client.client_id),
    };
  }

  /** @throws 404 "Unable to locate the resource" */
  async function get(id: string): Promise<Client> {
    const s = await store.findClientById(db, id);
    if (!s) throw dbNotFound();
    return s.client;
  }

  /** The client, or undefined (for other features: authorize, token, logout, …). */
  async function getClient(id: string): Promise<Client | undefined> {
    return (await store.findClientById(db, id))?.client;
  }

  /** One keyset page ordered by id. @throws 400 on a bad page_size or page_token */
  async function list(q: ClientListQuery): Promise<Page<Client>> {
    const at = clock.now();
    const ring = pageRing();
    const page = await parsePageQuery({ page_size: q.pageSize, page_token: q.pageToken }, ring, PAGE_KIND, at);
    const afterId = page.after?.id;
    if (page.after && typeof afterId !== 'string') {
      throw new AppError({
        status: 400,
        code: HERODOT.badRequest,
        description: 'Unable to parse pagination parameters: invalid pagination token',
      });
    }
    const rows = await store.listClients(db, {
      limit: page.size + 1,
      afterId: afterId as string | undefined,
      clientName: q.clientName,
      owner: q.owner,
    });
    const clients = rows.map((r) => r.client);
    return keysetPage(ring, PAGE_KIND, page.size, clients, (last) => ({ id: last.client_id }), at);
  }

  /** Writes a validated replacement over `old`, keeping what the caller cannot set. */
  async function write(
    trx: Parameters<typeof store.replaceClient>[0],
    old: StoredClient,
    valid: ClientDraft,
    registrationSignature?: string,
  ): Promise<WrittenClient> {
    const secretHash = valid.client_secret ? await secrets.hashChosen(valid.client_secret) : old.secretHash;
    const client = toClient({ ...valid, client_id: old.client.client_id }, old.client.created_at, now());
    await store.replaceClient(trx, {
      client,
      secretHash,
      registrationSignature: registrationSignature ?? old.registrationSignature,
      dynamic: old.dynamic ?? false,
    });
    const target = { kind: 'client', id: client.client_id };
    await core.audit.record(trx, { type: 'oauth2.client.updated', target });
    if (valid.client_secret) await core.audit.record(trx, { type: 'oauth2.client.secret_rotated', target });
    return { client, secret: valid.client_secret || undefined };
  }

  /**
   * Full replacement (admin PUT, dynamic PUT). Fields left out go back to empty; without a secret the
   * old one is kept. A dynamic PUT stores the rotated registration token's signature; `current`
   * (the client as its registration token found it) may keep what it has beyond the dynamic bounds.
   * @throws 400 validation errors, 404 unknown client
   */
  async function replace(
    id: string,
    draft: ClientDraft,
    opts: { dynamic?: boolean; registrationSignature?: string; current?: Client } = {},
  ): Promise<WrittenClient> {
    const valid = await validate({ ...draft, client_id: id }, opts.dynamic ?? false, opts.current);
    return writing(async (trx) => {
      const old = await store.findClientById(trx, id, { forUpdate: true });
      if (!old) throw dbNotFound();
      return write(trx, old, valid, opts.registrationSignature);
    });
  }

  /**
   * RFC 6902 JSON Patch over the client document (which holds the secret hash as `client_secret`, so
   * a patch that changes it sets a new secret, echoed once). Read, patch and write in one transaction.
   * @throws 400 bad patch or validation error, 404 unknown client
   */
  async function patch(id: string, ops: unknown): Promise<WrittenClient> {
    return writing(async (trx) => {
      const old = await store.findClientById(trx, id, { forUpdate: true });
      if (!old) throw dbNotFound();
      const current = old.secretHash ?? '';
      const patched = applyClientPatch(renderClient(old.client, { client_secret: current }), ops);
      const draft = toDraft(decodeBody(clientBody, patched));
      if (draft.client_secret === current) draft.client_secret = '';
      return write(trx, old, await validate({ ...draft, client_id: id }, false));
    });
  }

  /** Replaces the 13 lifespans (omitted ones become null). @throws 404 unknown client */
  async function setLifespans(id: string, lifespans: Lifespans): Promise<Client> {
    return writing(async (trx) => {
      const old = await store.findClientById(trx, id, { forUpdate: true });
      if (!old) throw dbNotFound();
      const client: Client = { ...old.client, ...lifespans, updated_at: now() };
      await store.replaceClient(trx, { ...old, client });
      await core.audit.record(trx, {
        type: 'oauth2.client.updated',
        target: { kind: 'client', id },
        details: { lifespans: true },
      });
      return client;
    });
  }

  /** Deletes the client and every token issued to it. @throws 404 unknown client */
  async function remove(id: string): Promise<void> {
    await writing(async (trx) => {
      if (!(await store.deleteClientById(trx, id))) throw dbNotFound();
      await deleteTokensOfClient(trx, id, core.changes);
      await core.audit.record(trx, { type: 'oauth2.client.deleted', target: { kind: 'client', id } });
    });
  }

  /**
   * Client authentication by id and secret (`client_secret_basic` / `client_secret_post`): whether
   * `secret` matches the stored hash of `stored` (a client read by `findStored`). A client without a
   * secret (or none at all) costs the same check as a wrong secret of a generated one, so timing does
   * not tell an unknown client from a wrong secret. A successful check may store a better hash
   * (secrets.ts says when); that write is best effort and retried on the next success.
   */
  async function verifyStoredSecret(stored: StoredClient | undefined, secret: string): Promise<boolean> {
    if (!stored?.secretHash) {
      await secrets.decoy(secret);
      return false;
    }
    const hash = stored.secretHash;
    const r = await secrets.verify(stored.client.client_id, secret, hash);
    if (r.ok && r.rehash) {
      const swapped = await store.replaceSecretHash(db, stored.client.client_id, hash, r.rehash).catch(() => false);
      // (The write also notifies every process, which then reads the row again.)
      if (swapped) stored.secretHash = r.rehash;
    }
    return r.ok;
  }

  /**
   * The stored client (with its secret hash), or undefined; for client authentication and the
   * flows. Kept in memory while the change feed is live: every write to `oauth2_clients`, from any
   * process, notifies it and drops them all (a trigger; sql/0182). Unknown ids are not kept.
   */
  const known = new Map<string, { version: number; stored: StoredClient }>();
  async function findStored(id: string): Promise<StoredClient | undefined> {
    const feed = core.changes;
    if (!feed?.live()) return store.findClientById(db, id);
    const version = feed.version('client');
    const k = known.get(id);
    if (k?.version === version) return k.stored;
    const s = await store.findClientById(db, id);
    if (!s) return undefined;
    // Bounded: the oldest entry goes first (entries of an older version are dead anyway).
    keepNewest(known, id, { version, stored: s }, CLIENT_CACHE_SIZE);
    return s;
  }

  /** The client when `secret` is its secret; undefined otherwise (unknown client, no secret, wrong one). */
  async function authenticateClient(id: string, secret: string): Promise<Client | undefined> {
    const s = await findStored(id);
    return (await verifyStoredSecret(s, secret)) ? s?.client : undefined;
  }

  return {
    create,
    get,
    getClient,
    list,
    replace,
    patch,
    setLifespans,
    remove,
    authenticateClient,
    findStored,
    verifyStoredSecret,
    newRegistrationToken,
  };
}
