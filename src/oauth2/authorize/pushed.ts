/**
 * Pushed authorization requests (RFC 9126). `POST /oauth2/par` takes an authorization request from
 * an authenticated client, validates it as `/oauth2/auth` would, stores it and answers a
 * `request_uri` (201, `expires_in` = `oauth2.pushed_authorization_requests.ttl`). The browser is
 * then sent to `/oauth2/auth?client_id=…&request_uri=…`: the parameters come from the pushed
 * request only (RFC 9126 §4), so they never travel through the browser and cannot be changed there.
 *
 * A handle starts one flow (RFC 9126 §4, "one-time use"): its first use marks it used in one
 * statement and keeps it for the flow's lifespan, and only that flow's later steps (the browser
 * back with a login or consent verifier, which are bound to the browser's CSRF cookies and to the
 * client) read it again. The handle is signed like an opaque token (core/crypto/hmac.ts): a forged
 * one is refused without a database read, and only its signature is stored.
 *
 * A `request` (a request object, RFC 9101) inside the push is verified with the client's keys and
 * its claims are the request; `request_uri` may not be pushed (RFC 9126 §2.1).
 */

import { keepNewest } from '../../core/bounded.ts';
import { generateOpaqueToken, verifyOpaqueToken } from '../../core/crypto/hmac.ts';
import { AppError } from '../../core/errors.ts';
import { parEndpoint } from '../discovery/service.ts';
import type { Dpop } from '../dpop.ts';
import type { CertificateSource } from '../mtls.ts';
import { oauth2Error } from '../oauth-errors.ts';
import { claimPushedRequest, findStartedPushedRequest, insertPushedRequest } from '../store/pushed-requests.ts';
import { authenticateClient, type ClientAuthDeps } from '../token/client-auth.ts';
import type { AuthorizeDeps } from './deps.ts';
import { validateAuthorizeRequest } from './pipeline.ts';
import type { ErrorTarget } from './request.ts';
import { requestObjectClaims } from './request-object.ts';

export const PUSHED_REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** Parameters that authenticate the client at the endpoint; they are not part of the request. */
const CLIENT_AUTH = ['client_secret', 'client_assertion', 'client_assertion_type'];
/** Parameters only gatehouse itself adds to `/oauth2/auth` (the flow's steps). */
const INTERNAL = ['login_verifier', 'consent_verifier'];
/** Started handles kept per process (see `started` in createPushedRequests). */
const STARTED_KEPT = 2_000;
/** A pushed request larger than this (a request object's claims, say) is read again instead of kept. */
const STARTED_MAX_LENGTH = 4_096;
/** Claims of a request object that describe the JWT, not the request (RFC 7519 §4.1). */
const JWT_CLAIMS = ['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sub'];

export interface PushedResponse {
  request_uri: string;
  expires_in: number;
}

export interface PushedRequests {
  /** `POST /oauth2/par`: validates and stores the request. Errors are AppErrors (JSON bodies). */
  push(
    form: Record<string, string>,
    authorization: string | undefined,
    dpopProof?: string,
    /** The request's client certificate (RFC 8705 client authentication). */
    certificate?: CertificateSource,
  ): Promise<PushedResponse>;
  /**
   * `/oauth2/auth` with a pushed `request_uri`: the stored parameters (plus the flow's verifier,
   * when the browser is coming back with one); undefined when `request_uri` is not a pushed one.
   */
  resolve(input: Record<string, string>): Promise<Record<string, string> | undefined>;
}

const stringValue = (v: unknown) => (typeof v === 'string' ? v : Array.isArray(v) ? v.join(' ') : JSON.stringify(v));

/**
 * Handles this process started a flow with, and what they hold, until the flow's end: the flow's
 * later steps (the login and consent re-entries) usually come back to the same process and need
 * not read the row again; another process reads it (findStartedPushedRequest). Bounded; the oldest
 * goes first.
 */
class StartedHandles {
  private readonly kept = new Map<string, { clientId: string; stored: string; until: number }>();
  set(signature: string, v: { clientId: string; stored: string; until: number }): void {
    keepNewest(this.kept, signature, v, STARTED_KEPT);
  }
  get(signature: string, clientId: string, now: Date): string | undefined {
    const v = this.kept.get(signature);
    return v && v.clientId === clientId && v.until > now.getTime() ? v.stored : undefined;
  }
}

export function createPushedRequests(d: AuthorizeDeps & { clientAuth: ClientAuthDeps; dpop: Dpop }): PushedRequests {
  const cfg = d.config.oauth2.pushed_authorization_requests;
  const secrets = d.config.secrets.system;
  const started = new StartedHandles();

  /** The request a pushed request object carries (RFC 9101 §6.3: its claims are the parameters). */
  async function fromRequestObject(client: Parameters<typeof requestObjectClaims>[1], jwt: string) {
    const claims = await requestObjectClaims(
      d.outbound,
      client,
      jwt,
      d.clock.now(),
      d.config.serve.limits.request_object,
    );
    if (claims.client_id !== undefined && claims.client_id !== client.id) {
      throw oauth2Error('invalid_request_object', {
        hint: "The 'client_id' of the request object must be the authenticated client's.",
      });
    }
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(claims)) if (!JWT_CLAIMS.includes(k) && v != null) out[k] = stringValue(v);
    return out;
  }

  return {
    async push(form, authorization, dpopProof, certificate) {
      if (!Object.keys(form).length) throw oauth2Error('invalid_request', { hint: 'The POST body can not be empty.' });
      if (form.request_uri !== undefined) {
        throw oauth2Error('invalid_request', {
          hint: "The 'request_uri' parameter must not be sent to the pushed authorization request endpoint.",
        });
      }
      const client = await authenticateClient(d.clientAuth, {
        form,
        authorization,
        ...(certificate ? { certificate } : {}),
      });
      if (form.client_id !== undefined && form.client_id !== client.id)
        throw oauth2Error('invalid_request', { hint: 'Provided client_id mismatch.' });
      let params: Record<string, string>;
      if (form.request !== undefined) params = await fromRequestObject(client, form.request);
      else {
        params = { ...form };
        for (const k of CLIENT_AUTH) delete params[k];
      }
      for (const k of INTERNAL) delete params[k];
      params.client_id = client.id;
      delete params.request;
      // RFC 9449 §10.1: a proof at this endpoint binds the code as `dpop_jkt` does.
      const proof = await d.dpop.verify(dpopProof, { htm: 'POST', htu: [parEndpoint(d.config)] });
      if (proof) {
        if (params.dpop_jkt !== undefined && params.dpop_jkt !== proof.jkt)
          throw oauth2Error('invalid_dpop_proof', { hint: "The DPoP proof's key is not the one 'dpop_jkt' names." });
        params.dpop_jkt = proof.jkt;
      }
      // The same checks as at /oauth2/auth; their errors answer here, as JSON (RFC 9126 §2.3).
      const target: ErrorTarget = { responseMode: 'query', state: '' };
      await validateAuthorizeRequest(
        { config: d.config, outbound: d.outbound, clients: d.clients, now: () => d.clock.now() },
        params,
        target,
      );
      const handle = generateOpaqueToken(PUSHED_REQUEST_URI_PREFIX, secrets);
      await insertPushedRequest(d.db, {
        signature: handle.signature,
        clientId: client.id,
        params: d.sessions.seal(params),
        expiresAt: new Date(d.clock.now().getTime() + cfg.ttl),
      });
      return { request_uri: handle.token, expires_in: Math.floor(cfg.ttl / 1000) };
    },

    async resolve(input) {
      const uri = input.request_uri;
      if (!cfg.enabled || !uri?.startsWith(PUSHED_REQUEST_URI_PREFIX)) return undefined;
      const clientId = input.client_id ?? '';
      if (!clientId) {
        throw oauth2Error('invalid_request', {
          hint: "The 'client_id' parameter is required with a pushed authorization request's 'request_uri'.",
        });
      }
      const unusable = () =>
        oauth2Error('invalid_request_uri', {
          hint: "The pushed authorization request's 'request_uri' is unknown, expired, or was used already.",
        });
      const signature = verifyOpaqueToken(PUSHED_REQUEST_URI_PREFIX, uri, secrets);
      if (!signature) throw unusable();
      const now = d.clock.now();
      const continuing = INTERNAL.some((k) => input[k]);
      // The flow may last as long as its login and consent requests (and a minute of skew).
      const keepUntil = new Date(now.getTime() + d.config.ttl.login_consent_request + 60_000);
      const stored = continuing
        ? (started.get(signature, clientId, now) ??
          (await findStartedPushedRequest(d.db, { signature, clientId, now })))
        : await claimPushedRequest(d.db, { signature, clientId, now, keepUntil });
      if (stored === undefined) throw unusable();
      if (!continuing && stored.length <= STARTED_MAX_LENGTH)
        started.set(signature, { clientId, stored, until: keepUntil.getTime() });
      let params: Record<string, string>;
      try {
        params = d.sessions.open<Record<string, string>>(stored);
      } catch (e) {
        // Sealed under a secret no longer configured: as good as expired.
        if (e instanceof AppError) throw e;
        throw unusable();
      }
      const out = { ...params };
      for (const k of INTERNAL) if (input[k] !== undefined) out[k] = input[k] as string;
      return out;
    },
  };
}
