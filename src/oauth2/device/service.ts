/**
 * The device authorization grant (RFC 8628) as Hydra 26 runs it:
 *
 *   device ── POST /oauth2/device/auth ──▶ device_code, user_code, verification_uri(_complete)
 *   browser ─ GET /oauth2/device/verify ──▶ urls.device.verification?device_challenge=…
 *   UI ────── PUT /admin/oauth2/auth/requests/device/accept {user_code} ──▶ redirect_to (device_verifier)
 *   browser ─ GET /oauth2/device/verify?device_verifier=… ──▶ the usual login challenge, then consent
 *   browser ─ GET /oauth2/device/verify?consent_verifier=… ──▶ urls.device.success?client_id=…
 *   device ── POST /oauth2/token grant_type=urn:ietf:params:oauth:grant-type:device_code (polls)
 *
 * Device challenges and verifiers are sealed like login challenges (`keyRing(secrets.system,
 * 'flow')`), valid `ttl.login_consent_request`; a device verifier is used once (recorded in
 * `oauth2_used_verifiers` as `device:<challenge id>`). The device request
 * row holds only the signatures of the device and user codes. A rejected login or consent marks
 * the request rejected (the device then gets `access_denied`; Hydra 26 keeps polling pending).
 *
 * Guessing user codes (RFC 8628 §5.1) is limited twice: per device challenge
 * (`MAX_USER_CODE_ATTEMPTS`, then a new verification must be started) and per source address. The
 * user code is typed into the verification UI, which sends it to the admin API from its own
 * address; the user's browser is seen only at `/oauth2/device/verify`, where the challenge is
 * minted. So the challenge carries (sealed) that browser's address, wrong codes are counted against
 * it (`rate_limit.failed_auth.per_address_user_codes`), and an address over its limit gets neither
 * new challenges nor answers for the ones it has (429 with Retry-After) until the window ends.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { generateOpaqueToken } from '../../core/crypto/hmac.ts';
import { openJson, sealJson, TokenError } from '../../core/crypto/jwe.ts';
import type { KeyRing } from '../../core/crypto/keys.ts';
import { random, safeEqual } from '../../core/crypto/random.ts';
import { withTx } from '../../core/db/tx.ts';
import { AppError } from '../../core/errors.ts';
import { type AddressFailureLimit, TOO_MANY_TEXT } from '../../core/http/auth-failures.ts';
import { grantOf, persistConsent } from '../authorize/consent-step.ts';
import type { AuthorizeDeps } from '../authorize/deps.ts';
import { afterLogin, checkCsrf, startLogin, verifierExpiry } from '../authorize/login-step.ts';
import type { AuthorizeRequest } from '../authorize/request.ts';
import type { AuthorizeOutcome } from '../authorize/respond.ts';
import { appendPath } from '../discovery/service.ts';
import { challengeNotFound } from '../flows/challenge.ts';
import type { CookieJar } from '../flows/cookies.ts';
import type { CertificateSource } from '../mtls.ts';
import { deniedError, oauth2Error } from '../oauth-errors.ts';
import { clientGrantTypes, type FlowClient } from '../ports.ts';
import { firstDisallowedAudience, scopeStrategy, splitSpaces } from '../scope.ts';
import {
  countWrongUserCode,
  findByUserCode,
  insertDeviceRequest,
  settleDeviceRequest,
  wrongUserCodes,
} from '../store/device.ts';
import { isConsentUsed, markVerifierUsed } from '../store/flows.ts';
import type { Database } from '../tables.ts';
import { authenticateClient, type ClientAuthDeps } from '../token/client-auth.ts';
import { DEVICE_CODE_GRANT, type UserCodes } from './codes.ts';

export { DEVICE_CODE_GRANT };
/** Wrong user codes one device challenge may submit before it is refused. */
export const MAX_USER_CODE_ATTEMPTS = 5;
/** Hydra draws a new user code at most this many times when one is taken. */
const USER_CODE_DRAWS = 3;

interface DeviceChallenge {
  id: string;
  csrf: string;
  requestUrl: string;
  /** unix seconds */
  requestedAt: number;
  /** The address of the browser that asked for the challenge (absent in challenges of older versions). */
  address?: string;
}

interface DeviceVerifier extends DeviceChallenge {
  clientId: string;
  signature: string;
  requestedScope: string[];
  requestedAudience: string[];
}

export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

export interface DeviceDeps extends AuthorizeDeps {
  db: Kysely<Database>;
  ring: KeyRing;
  userCodes: UserCodes;
  clientAuth: ClientAuthDeps;
  /** Wrong user codes per browser address (core/http/auth-failures.ts). */
  userCodeAddresses: AddressFailureLimit;
}

const randomId = () => random(16).toString('hex');
const userCodeInvalid = () =>
  oauth2Error('invalid_request', {
    hint: "The 'user_code' session could not be found or has expired or is otherwise malformed.",
  });

/** The failed-authentication limiter's 429 (RFC 6585 §4), for an address over its wrong user codes. */
const tooManyFromAddress = (retryAfter: number) =>
  new AppError({
    status: 429,
    code: 'too_many_requests',
    description: TOO_MANY_TEXT,
    headers: { 'Retry-After': String(retryAfter) },
  });

/**
 * The device authorization grant (RFC 8628): the device's request, the browser's verification and
 * the user code's acceptance.
 * Long: the three steps share the sealed challenge and verifier, the client look-up and the
 * per-address limit on wrong user codes.
 */
export function createDeviceService(d: DeviceDeps) {
  const cfg = d.config;
  const ttl = cfg.ttl.login_consent_request;
  const nowMs = () => d.clock.now().getTime();
  const verifyUrl = appendPath(cfg.urls.self.public, '/oauth2/device/verify');

  async function open<T extends DeviceChallenge>(kind: 'device_challenge' | 'device_verifier', token: string) {
    let v: T;
    try {
      v = await openJson<T>(d.ring, kind, token, nowMs());
    } catch (e) {
      if (e instanceof TokenError && e.reason === 'expired') {
        throw oauth2Error('request_unauthorized', { hint: 'The device request has expired, please try again.' });
      }
      if (kind === 'device_challenge') throw challengeNotFound();
      throw oauth2Error('access_denied', {
        hint: 'The device verifier has already been used, has not been granted, or is invalid.',
      });
    }
    if (v.requestedAt * 1000 + ttl < nowMs()) {
      throw oauth2Error('request_unauthorized', { hint: 'The device request has expired, please try again.' });
    }
    return v;
  }

  const seal = (kind: 'device_challenge' | 'device_verifier', v: DeviceChallenge) =>
    sealJson(d.ring, kind, v, v.requestedAt * 1000 + ttl - nowMs(), nowMs());

  /** What the login and consent steps need of an authorization request, for a device flow. */
  const pseudoRequest = (client: FlowClient, scope: string[], audience: string[]): AuthorizeRequest => ({
    client,
    params: { client_id: client.id },
    redirectUri: '',
    responseTypes: [],
    responseMode: 'query',
    scope,
    audience,
    state: '',
    nonce: '',
    prompt: [],
    maxAge: -1,
    codeChallenge: '',
    codeChallengeMethod: '',
  });

  async function clientOf(clientId: string | undefined): Promise<FlowClient> {
    if (!clientId) throw oauth2Error('invalid_client', { hint: "Query parameter 'client_id' is missing." });
    const c = await d.clients.get(clientId);
    if (!c) throw oauth2Error('invalid_client', { hint: 'Client does not exist' });
    return c;
  }

  async function reject(signature: string | undefined): Promise<void> {
    if (signature) await settleDeviceRequest(d.db, signature, { state: 'rejected' });
  }

  return {
    /** `POST /oauth2/device/auth` (oAuth2DeviceFlow). */
    async authorize(form: Record<string, string>, authorization: string | undefined, certificate?: CertificateSource) {
      if (!Object.keys(form).length) throw oauth2Error('invalid_request', { hint: 'The POST body can not be empty.' });
      const client = await authenticateClient(d.clientAuth, {
        form,
        authorization,
        ...(certificate ? { certificate } : {}),
      });
      if (client.id !== form.client_id) throw oauth2Error('invalid_request', { hint: 'Provided client_id mismatch.' });
      if (!clientGrantTypes(client).includes(DEVICE_CODE_GRANT)) {
        throw oauth2Error('invalid_grant', {
          hint: `The requested OAuth 2.0 Client does not have the '${DEVICE_CODE_GRANT}' grant.`,
        });
      }
      const scope = splitSpaces(form.scope);
      const strategy = scopeStrategy(cfg.strategies.scope);
      for (const s of scope) {
        if (!strategy(splitSpaces(client.scope), s)) {
          throw oauth2Error('invalid_scope', { hint: `The OAuth 2.0 Client is not allowed to request scope '${s}'.` });
        }
      }
      const audience = splitSpaces(form.audience);
      const bad = firstDisallowedAudience(client.audience, audience);
      if (bad !== undefined) {
        throw oauth2Error('invalid_request', {
          hint: `Requested audience '${bad}' has not been whitelisted by the OAuth 2.0 Client.`,
        });
      }
      const now = d.clock.now();
      const lifespan = cfg.ttl.device_user_code;
      const expiresAt = new Date(Math.round((now.getTime() + lifespan) / 1000) * 1000);
      const device = generateOpaqueToken('ory_dc_', cfg.secrets.system);
      for (let i = 0; i < USER_CODE_DRAWS; i++) {
        const user = d.userCodes.generate();
        const stored = await insertDeviceRequest(d.db, {
          signature: device.signature,
          userCodeSignature: user.signatures[0] as string,
          requestId: randomUUID(),
          clientId: client.id,
          requestedScope: scope,
          requestedAudience: audience,
          requestedAt: now,
          expiresAt,
        });
        if (!stored) continue;
        return {
          device_code: device.token,
          user_code: user.code,
          verification_uri: verifyUrl,
          verification_uri_complete: `${verifyUrl}?user_code=${encodeURIComponent(user.code)}`,
          expires_in: Math.round((expiresAt.getTime() - now.getTime()) / 1000),
          interval: Math.round(cfg.oauth2.device_authorization.token_polling_interval / 1000),
        } satisfies DeviceAuthorizationResponse;
      }
      throw oauth2Error('server_error', { debug: `Exceeded user-code generation max attempts ${USER_CODE_DRAWS}.` });
    },

    /**
     * `GET /oauth2/device/verify` (performOAuth2DeviceVerificationFlow): one step per verifier
     * present. `address` is the browser's (the connection's), sealed into a new device challenge.
     */
    async verify(params: Record<string, string>, jar: CookieJar, address: string): Promise<AuthorizeOutcome> {
      const deviceVerifier = (params.device_verifier ?? '').trim();
      const loginVerifier = (params.login_verifier ?? '').trim();
      const consentVerifier = (params.consent_verifier ?? '').trim();

      if (!deviceVerifier && !loginVerifier && !consentVerifier) {
        const wait = await d.userCodeAddresses.blocked(address);
        if (wait !== undefined) throw tooManyFromAddress(wait);
        const u = new URL(verifyUrl);
        for (const [k, v] of Object.entries(params)) if (k.toLowerCase() !== 'user_code') u.searchParams.append(k, v);
        const challenge: DeviceChallenge = {
          id: randomId(),
          csrf: randomId(),
          requestUrl: u.toString(),
          requestedAt: Math.floor(nowMs() / 1000),
          address,
        };
        jar.set(d.cookies.deviceCsrfName, await d.cookies.sealCsrf(challenge.csrf), { maxAgeMs: ttl });
        const to = new URL(cfg.urls.device.verification);
        to.searchParams.set('device_challenge', await seal('device_challenge', challenge));
        if (params.user_code !== undefined) to.searchParams.set('user_code', params.user_code);
        return { kind: 'redirect', status: 302, location: to.toString() };
      }

      if (deviceVerifier && !loginVerifier && !consentVerifier) {
        const v = await open<DeviceVerifier>('device_verifier', deviceVerifier);
        // CSRF first: a verifier that leaked to another browser cannot be burnt by it.
        await checkCsrf(d, jar, d.cookies.deviceCsrfName, v.csrf);
        const usedUntil = new Date((v.requestedAt + 60) * 1000 + ttl);
        if (!(await markVerifierUsed(d.db, `device:${v.id}`, usedUntil))) {
          throw oauth2Error('access_denied', { hint: 'The device verifier has already been used.' });
        }
        const client = await clientOf(params.client_id);
        if (client.id !== v.clientId) {
          throw oauth2Error('invalid_client', {
            hint: 'The flow client id does not match the device request client id.',
          });
        }
        const ar = pseudoRequest(client, v.requestedScope, v.requestedAudience);
        const requestUrl = new URL(verifyUrl);
        requestUrl.searchParams.set('client_id', client.id);
        return startLogin(d, ar, jar, requestUrl.toString(), { device: { signature: v.signature } });
      }

      const client = await clientOf(params.client_id);
      if (loginVerifier) {
        const s = await d.codec.open('login_verifier', loginVerifier);
        if (!s.device)
          throw oauth2Error('access_denied', { hint: 'The login verifier does not belong to a device flow.' });
        if (s.loginError) {
          await reject(s.device.signature);
          throw deniedError(s.loginError);
        }
        return afterLogin(d, pseudoRequest(client, s.requestedScope, s.requestedAudience), jar, loginVerifier);
      }

      const s = await d.codec.open('consent_verifier', consentVerifier);
      if (!s.device)
        throw oauth2Error('access_denied', { hint: 'The consent verifier does not belong to a device flow.' });
      if (s.clientId !== client.id) {
        throw oauth2Error('invalid_client', {
          hint: 'The flow client id does not match the device request client id.',
        });
      }
      const signature = s.device.signature;
      if (s.consentError) {
        if (!(await isConsentUsed(d.db, s.consentRequestId))) await reject(signature);
        throw deniedError(s.consentError);
      }
      const c = s.consent;
      if (!c || !s.login) throw oauth2Error('access_denied', { hint: 'The consent verifier has not been granted.' });
      await checkCsrf(d, jar, d.cookies.consentCsrfName(s.clientId), s.consentCsrf ?? '');
      const grant = grantOf(d, { client, nonce: '' }, s, c);
      await withTx(d.db, async (trx) => {
        await persistConsent(trx, d, s, c);
        // Usable once, like the browser flow's (the record outlives a revocation of the consent).
        if (!(await markVerifierUsed(trx, `consent:${s.consentRequestId}`, verifierExpiry(d, s)))) {
          throw oauth2Error('access_denied', { hint: 'The consent verifier has already been used.' });
        }
        const settled = await settleDeviceRequest(trx, signature, {
          state: 'accepted',
          subject: s.subject,
          grantedScope: grant.grantedScope,
          grantedAudience: grant.grantedAudience,
          sessionData: d.sessions.seal(grant.session),
        });
        if (!settled)
          throw oauth2Error('access_denied', { hint: 'The device request was already handled or has expired.' });
      });
      jar.clear(d.cookies.consentCsrfName(s.clientId));
      const done = new URL(cfg.urls.device.success);
      done.searchParams.set('client_id', client.id);
      return { kind: 'redirect', status: 302, location: done.toString() };
    },

    /** `PUT /admin/oauth2/auth/requests/device/accept` (acceptUserCodeRequest). */
    async acceptUserCode(challenge: string | undefined, userCode: string | undefined) {
      if (!challenge) {
        throw oauth2Error('invalid_request', {
          hint: "Query parameter 'device_challenge' is not defined but should have been.",
        });
      }
      if (!userCode) throw oauth2Error('invalid_request', { hint: "Field 'user_code' must not be empty." });
      const f = await open<DeviceChallenge>('device_challenge', challenge);
      if ((await wrongUserCodes(d.db, f.id)) >= MAX_USER_CODE_ATTEMPTS) {
        throw oauth2Error('request_forbidden', {
          status: 429,
          hint: 'Too many wrong user codes for this device challenge; start the verification again.',
        });
      }
      // Right or wrong, no answer while the browser's address is over its limit (RFC 8628 §5.1).
      const wait = f.address === undefined ? undefined : await d.userCodeAddresses.blocked(f.address);
      if (wait !== undefined) throw tooManyFromAddress(wait);
      const signatures = d.userCodes.signatures(userCode);
      const found = await findByUserCode(d.db, signatures);
      const matches =
        found !== undefined &&
        signatures.some((s) => safeEqual(s, found.userCodeSignature)) &&
        found.state === 'pending' &&
        found.expiresAt.getTime() > nowMs();
      if (!found || !matches) {
        await countWrongUserCode(d.db, f.id, new Date((f.requestedAt + 60) * 1000 + ttl));
        if (f.address !== undefined) await d.userCodeAddresses.fail(f.address);
        throw userCodeInvalid();
      }
      const requestUrl = new URL(f.requestUrl);
      if (!requestUrl.searchParams.get('client_id')) requestUrl.searchParams.set('client_id', found.clientId);
      const verifier: DeviceVerifier = {
        ...f,
        requestUrl: requestUrl.toString(),
        clientId: found.clientId,
        signature: found.signature,
        requestedScope: found.requestedScope,
        requestedAudience: found.requestedAudience,
      };
      requestUrl.searchParams.set('device_verifier', await seal('device_verifier', verifier));
      requestUrl.searchParams.set('client_id', found.clientId);
      return { redirect_to: requestUrl.toString() };
    },
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
