/**
 * A directory as a request uses it, made from its row (`directoryOf`). Its sealed fields (webhook
 * and SCIM secrets, Google tokens) are opened on first read, then kept: a SCIM request opens the
 * SCIM secret only, a delivery the webhook secret only, and nothing but a Google sync opens the
 * Google tokens.
 *
 * The fields are accessors of classes, not accessors defined on each object: an accessor pair made
 * per object (Object.defineProperty with closures of its own, or an object literal's get/set) gives
 * every object hidden classes of its own, which V8 allocates in its old generation. Every SCIM
 * request reads its directory, so each left about 2 KB there that only a full collection frees,
 * and V8 lets its old generation grow by up to four times what is live before collecting it (see
 * docs/performance.md, Memory). Being on the prototype, they are not own properties either:
 * spreading, logging or serialising a directory neither opens nor shows a secret.
 */
import type { DirectoryRow } from '../store/directories.ts';
import { type Directory, type DirectoryType, isDirectoryType } from '../types.ts';

export type SecretField = 'webhook_secret' | 'scim_secret' | 'google_access_token' | 'google_refresh_token';

/** Opens a sealed value of a directory's field (core/crypto/aead.ts `open` with the field's context). */
export type OpenSealed = (id: string, field: SecretField, sealed: string) => string;

/** One sealed field: opened when first read (an empty value is not sealed), or the value set. */
class Sealed {
  #value: string | undefined;
  readonly #open: OpenSealed;
  readonly #id: string;
  readonly #field: SecretField;
  readonly #sealed: string;

  constructor(open: OpenSealed, id: string, field: SecretField, sealed: string) {
    this.#open = open;
    this.#id = id;
    this.#field = field;
    this.#sealed = sealed;
  }

  get value(): string {
    this.#value ??= this.#sealed ? this.#open(this.#id, this.#field, this.#sealed) : '';
    return this.#value;
  }

  set value(v: string) {
    this.#value = v;
  }
}

/** A part of a directory with a sealed `secret` (its webhook, its SCIM endpoint). */
class WithSecret {
  readonly #secret: Sealed;
  constructor(secret: Sealed) {
    this.#secret = secret;
  }
  get secret(): string {
    return this.#secret.value;
  }
  set secret(v: string) {
    this.#secret.value = v;
  }
}

class Webhook extends WithSecret {
  endpoint: string;
  constructor(endpoint: string, secret: Sealed) {
    super(secret);
    this.endpoint = endpoint;
  }
}

class Scim extends WithSecret {
  path: string;
  constructor(path: string, secret: Sealed) {
    super(secret);
    this.path = path;
  }
}

class StoredDirectory implements Directory {
  id: string;
  name: string;
  tenant: string;
  product: string;
  type: DirectoryType;
  logWebhookEvents: boolean;
  deactivated: boolean;
  webhook: Webhook;
  scim: Scim;
  googleDomain: string;
  googleCustomerId: string;
  googleAccessTokenExpiresAt: Date | null;
  googleGroups: string[];
  createdAt: Date;
  readonly #googleAccessToken: Sealed;
  readonly #googleRefreshToken: Sealed;

  constructor(r: DirectoryRow, open: OpenSealed) {
    this.id = r.id;
    this.name = r.name;
    this.tenant = r.tenant;
    this.product = r.product;
    this.type = isDirectoryType(r.type) ? r.type : 'generic-scim-v2';
    this.logWebhookEvents = r.log_webhook_events;
    this.deactivated = r.deactivated;
    this.webhook = new Webhook(r.webhook_endpoint, new Sealed(open, r.id, 'webhook_secret', r.webhook_secret));
    this.scim = new Scim(r.scim_path, new Sealed(open, r.id, 'scim_secret', r.scim_secret));
    this.googleDomain = r.google_domain;
    this.googleCustomerId = r.google_customer_id;
    this.googleAccessTokenExpiresAt = r.google_access_token_expires_at;
    this.googleGroups = r.google_groups ?? [];
    this.createdAt = r.created_at;
    this.#googleAccessToken = new Sealed(open, r.id, 'google_access_token', r.google_access_token);
    this.#googleRefreshToken = new Sealed(open, r.id, 'google_refresh_token', r.google_refresh_token);
  }

  get googleAccessToken(): string {
    return this.#googleAccessToken.value;
  }
  set googleAccessToken(v: string) {
    this.#googleAccessToken.value = v;
  }
  get googleRefreshToken(): string {
    return this.#googleRefreshToken.value;
  }
  set googleRefreshToken(v: string) {
    this.#googleRefreshToken.value = v;
  }
}

/** The directory of a row; `open` opens a sealed field when it is first read. */
export const directoryOf = (r: DirectoryRow, open: OpenSealed): Directory => new StoredDirectory(r, open);
