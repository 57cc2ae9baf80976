/**
 * `POST /credentials` (Hydra's createVerifiableCredential; OpenID for Verifiable Credential Issuance,
 * draft 00 as Hydra implements it). The holder of an access token asks for a `jwt_vc_json`
 * credential and proves possession of a key with a `proof` JWT that carries that key in its `jwk`
 * header, `typ: openid4vci-proof+jwt`, `aud` = the issuer and `nonce` = a `c_nonce` issued for this
 * access token (each accepted once). Without a proof the answer is Hydra's priming response (400
 * `missing_proof` with a fresh `c_nonce`). The credential is a JWT signed with the OpenID Connect
 * key (`hydra.openid.id-token`): `sub` and `credentialSubject.id` are the key as a `did:jwk`,
 * `credentialSubject` holds the token's subject (`sub`, as in its ID token) and the ID-token claims
 * the consent granted, valid one hour.
 */
import { createHash, randomUUID } from 'node:crypto';
import { decodeProtectedHeader, importJWK, type JWK, jwtVerify, SignJWT } from 'jose';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Clock } from '../../core/clock.ts';
import type { OAuth2Config } from '../deps.ts';
import { appendPath } from '../discovery/service.ts';
import type { Dpop } from '../dpop.ts';
import { parseOr400 } from '../guard.ts';
import { oauth2Error } from '../oauth-errors.ts';
import type { KeyPort } from '../ports.ts';
import { createSenderConstraint, type PresentedToken } from '../sender-constraint.ts';
import type { SessionCodec } from '../session-data.ts';
import { findAccessToken, insertJti } from '../store/tokens.ts';
import type { Database } from '../tables.ts';
import { accessTokenSignature } from '../token/lookup.ts';
import type { GrantSession } from '../token/session.ts';
import type { VcNonces } from './nonce.ts';

export const PROOF_TYP = 'openid4vci-proof+jwt';
/** The signing algorithms a proof may use (`cryptographic_suites_supported`). */
export const PROOF_ALGS = ['PS256', 'RS256', 'ES256', 'PS384', 'RS384', 'ES384', 'PS512', 'RS512', 'ES512', 'EdDSA'];

export const createVerifiableCredentialBody = z.looseObject({
  format: z.string().optional(),
  types: z.array(z.string()).optional(),
  proof: z.looseObject({ proof_type: z.string().optional(), jwt: z.string().optional() }).nullish(),
});

export interface CredentialsDeps {
  config: OAuth2Config;
  clock: Clock;
  db: Kysely<Database>;
  keys: KeyPort;
  sessions: SessionCodec;
  nonces: VcNonces;
  dpop: Dpop;
}

const bad = (hint: string) => oauth2Error('invalid_request', { hint });

export type CredentialResult =
  | { status: 200; body: { format: 'jwt_vc_json'; credential_draft_00: string } }
  | {
      status: 400;
      body: { error: string; error_description: string; format: string; c_nonce: string; c_nonce_expires_in: number };
    };

export function createCredentialsService(d: CredentialsDeps) {
  const issuer = d.config.urls.self.issuer;
  const w = d.config.webfinger.oidc_discovery;
  const credentialUrls = [w.verifiable_credentials_url || appendPath(d.config.urls.self.public, '/credentials')];
  const senderConstraint = createSenderConstraint(d);

  async function proofKey(jwt: string): Promise<{ key: Awaited<ReturnType<typeof importJWK>>; jwk: JWK }> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(jwt);
    } catch {
      throw bad('The JWT header in the proof is malformed.');
    }
    const jwk = header.jwk as JWK | undefined;
    if (!jwk || typeof jwk !== 'object' || 'd' in jwk || !header.alg || !PROOF_ALGS.includes(header.alg)) {
      throw bad('The JWK in the JWT header is malformed.');
    }
    try {
      return { key: await importJWK(jwk, header.alg), jwk };
    } catch {
      throw bad('The JWK in the JWT header is malformed.');
    }
  }

  return {
    async create(presented: PresentedToken, rawBody: unknown): Promise<CredentialResult> {
      const { token } = presented;
      const signature = token ? await accessTokenSignature(d, token) : undefined;
      const row = signature ? await findAccessToken(d.db, signature) : undefined;
      if (!signature || !row || (row.expiresAt && row.expiresAt.getTime() < d.clock.now().getTime())) {
        throw oauth2Error('request_unauthorized', {
          hint: 'Token is inactive because it is malformed, expired or otherwise invalid.',
        });
      }
      const session = d.sessions.open<GrantSession>(row.sessionData);
      await senderConstraint(session, presented, credentialUrls);
      const body = parseOr400(createVerifiableCredentialBody, rawBody);
      if (body.format !== 'jwt_vc_json') throw bad(`The format '${body.format ?? ''}' is not supported.`);
      if (!body.proof) {
        return {
          status: 400,
          body: {
            error: 'missing_proof',
            error_description: 'Could not issue a verifiable credential because the proof is missing in the request.',
            format: 'jwt_vc',
            c_nonce: await d.nonces.issue(signature),
            c_nonce_expires_in: Math.round(d.nonces.lifespanMs / 1000),
          },
        };
      }
      if (body.proof.proof_type !== 'jwt')
        throw bad(`The proof type '${body.proof.proof_type ?? ''}' is not supported.`);
      const proof = body.proof.jwt ?? '';
      if (proof.split('.').length !== 3) throw bad('The JWT in the proof is malformed.');
      const { key, jwk } = await proofKey(proof);
      let claims: Record<string, unknown>;
      try {
        ({ payload: claims } = await jwtVerify(proof, key, {
          algorithms: PROOF_ALGS,
          typ: PROOF_TYP,
          audience: issuer,
          currentDate: d.clock.now(),
        }));
      } catch {
        throw bad(
          `The proof JWT must be signed with the key in its 'jwk' header, have typ '${PROOF_TYP}' and the audience '${issuer}'.`,
        );
      }
      const nonce = claims.nonce;
      if (typeof nonce !== 'string' || !nonce) throw bad('The JWT did not contain the "nonce" claim.');
      const until = await d.nonces.check(nonce, signature);
      if (!until) throw bad('The nonce is invalid.');
      const nonceId = createHash('sha256').update(`vc_nonce:${nonce}`).digest('base64url');
      if (!(await insertJti(d.db, nonceId, until, d.clock.now()))) throw bad('The nonce has already been used.');

      const did = `did:jwk:${Buffer.from(JSON.stringify(publicJwk(jwk))).toString('base64url')}`;
      const subject: Record<string, unknown> = { ...(session.idToken.extra ?? {}) };
      subject.id = did;
      subject.sub = session.idToken.sub || row.subject;
      const now = Math.floor(d.clock.now().getTime() / 1000);
      const signing = await d.keys.signingKey('hydra.openid.id-token');
      const credential = await new SignJWT({
        vc: {
          '@context': ['https://www.w3.org/2018/credentials/v1'],
          type: ['VerifiableCredential', 'UserInfoCredential'],
          credentialSubject: subject,
        },
      })
        .setProtectedHeader({ alg: signing.alg, kid: signing.kid, typ: 'JWT' })
        .setIssuer(session.idToken.iss || issuer)
        .setSubject(did)
        .setJti(randomUUID())
        .setIssuedAt(now)
        .setNotBefore(now)
        .setExpirationTime(now + 3600)
        .sign(signing.key);
      return { status: 200, body: { format: 'jwt_vc_json', credential_draft_00: credential } };
    },
  };
}

/** The public members of a JWK (did:jwk encodes the public key only). */
function publicJwk(jwk: JWK): JWK {
  const out: JWK = {};
  for (const k of ['kty', 'crv', 'x', 'y', 'n', 'e', 'alg', 'kid', 'use'] as const) {
    if (jwk[k] !== undefined) (out as Record<string, unknown>)[k] = jwk[k];
  }
  return out;
}

export type CredentialsService = ReturnType<typeof createCredentialsService>;
