import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkNonce,
  checkState,
  forcesLogin,
  parseMaxAge,
  parsePrompt,
} from '../../../src/oauth2/authorize/checks/oidc.ts';
import { checkPkceRequest, verifyPkce } from '../../../src/oauth2/authorize/checks/pkce.ts';
import { checkRedirectSecure, resolveRedirectUri } from '../../../src/oauth2/authorize/checks/redirect-uri.ts';
import { checkResponseTypes, effectiveResponseMode } from '../../../src/oauth2/authorize/checks/response.ts';
import { murmur3 } from '../../../src/oauth2/flows/cookies.ts';
import type { FlowClient } from '../../../src/oauth2/ports.ts';
import { firstDisallowedAudience, wildcardScopeStrategy } from '../../../src/oauth2/scope.ts';
import { obfuscateSubject } from '../../../src/oauth2/subject.ts';

const client = (over: Partial<FlowClient> = {}): FlowClient => ({
  id: 'c1',
  redirectUris: ['https://app.example/cb'],
  grantTypes: [],
  responseTypes: [],
  scope: 'openid offline',
  audience: [],
  tokenEndpointAuthMethod: 'client_secret_basic',
  tokenEndpointAuthSigningAlg: '',
  jwks: undefined,
  jwksUri: '',
  requestUris: [],
  requestObjectSigningAlg: '',
  userinfoSignedResponseAlg: 'none',
  subjectType: 'public',
  sectorIdentifierUri: '',
  accessTokenStrategy: '',
  skipConsent: false,
  requirePushedAuthorizationRequests: false,
  dpopBoundAccessTokens: false,
  tlsClientCertificateBoundAccessTokens: false,
  postLogoutRedirectUris: [],
  frontchannelLogoutUri: '',
  backchannelLogoutUri: '',
  lifespans: {},
  wire: {},
  ...over,
});

const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return `${(e as { code: string }).code}: ${(e as { hint?: string }).hint ?? ''}`;
  }
  return 'ok';
};

describe('authorization request checks', () => {
  it('accepts prompt=select_account (like login) and rejects unknown or combined none', () => {
    expect(parsePrompt('select_account')).toEqual(['select_account']);
    expect(forcesLogin(parsePrompt('select_account'))).toBe(true);
    expect(forcesLogin(parsePrompt('consent'))).toBe(false);
    expect(code(() => parsePrompt('none login'))).toMatch(/^invalid_request: Parameter 'prompt' was set to 'none'/);
    expect(code(() => parsePrompt('bogus'))).toMatch(/^invalid_request: Used unknown value/);
  });

  it('needs 8 characters of state and of nonce, and a nonce whenever an id_token is returned', () => {
    expect(code(() => checkState('1234567'))).toMatch(/^invalid_state/);
    expect(code(() => checkState('12345678'))).toBe('ok');
    expect(code(() => checkNonce('', ['code']))).toBe('ok');
    expect(code(() => checkNonce('', ['id_token']))).toMatch(/Implicit Flow/);
    expect(code(() => checkNonce('', ['code', 'id_token']))).toMatch(/Hybrid Flow/);
    expect(code(() => checkNonce('short', ['code']))).toMatch(/^insufficient_entropy/);
    expect(parseMaxAge(undefined)).toBe(-1);
    expect(parseMaxAge('0')).toBe(0);
    expect(code(() => parseMaxAge('-3'))).toMatch(/^invalid_request/);
  });

  it('matches redirect URIs exactly, loopback on any port, and refuses fragments and http outside dev', () => {
    const c = client({ redirectUris: ['https://app.example/cb', 'http://127.0.0.1/cb?x=1'] });
    expect(resolveRedirectUri(c, 'https://app.example/cb', [])).toBe('https://app.example/cb');
    expect(resolveRedirectUri(c, 'http://127.0.0.1:5555/cb?x=1', [])).toBe('http://127.0.0.1:5555/cb?x=1');
    expect(code(() => resolveRedirectUri(c, 'https://app.example/cb2', []))).toMatch(/pre-registered redirect urls/);
    expect(code(() => resolveRedirectUri(c, '', []))).toMatch(/pre-registered/);
    expect(resolveRedirectUri(client(), '', [])).toBe('https://app.example/cb');
    expect(code(() => resolveRedirectUri(client(), '', ['openid']))).toMatch(/required when using OpenID Connect/);
    expect(code(() => resolveRedirectUri(client({ redirectUris: ['https://a/cb#x'] }), 'https://a/cb#x', []))).not.toBe(
      'ok',
    );
    expect(code(() => checkRedirectSecure('http://app.example/cb', false))).toMatch(/insecure protocol/);
    expect(code(() => checkRedirectSecure('http://app.localhost/cb', false))).toBe('ok');
    expect(code(() => checkRedirectSecure('http://app.example/cb', true))).toBe('ok');
  });

  it('allows registered response type combinations in any order and picks the response mode', () => {
    const c = client({ responseTypes: ['code', 'code id_token', 'token'] });
    expect(checkResponseTypes(c, 'id_token code')).toEqual(['id_token', 'code']);
    expect(code(() => checkResponseTypes(c, 'id_token'))).toMatch(/^unsupported_response_type/);
    expect(code(() => checkResponseTypes(client(), 'token'))).toMatch(/^unsupported_response_type/);
    expect(effectiveResponseMode(['code'], undefined)).toBe('query');
    expect(effectiveResponseMode(['code', 'id_token'], undefined)).toBe('fragment');
    expect(code(() => effectiveResponseMode(['token'], 'query'))).toMatch(/^unsupported_response_mode/);
  });

  it('refuses PKCE plain (and a challenge without a method) unless allow_plain, at both endpoints, as fosite', () => {
    const strict = { enforced: false, enforcedForPublicClients: false, allowPlain: false };
    const plainRefused = /^invalid_request: .*Clients must use code_challenge_method=S256, plain is not allowed\./;
    expect(code(() => checkPkceRequest(strict, false, 'abc', 'plain'))).toMatch(plainRefused);
    expect(code(() => checkPkceRequest(strict, false, 'abc', ''))).toMatch(plainRefused);
    expect(checkPkceRequest(strict, false, 'abc', 'S256')).toEqual({
      codeChallenge: 'abc',
      codeChallengeMethod: 'S256',
    });
    const verifier = 'v'.repeat(50);
    expect(code(() => verifyPkce(strict, false, verifier, 'plain', verifier))).toMatch(plainRefused);
  });

  it('accepts PKCE S256 and plain, enforces it when configured, and verifies the verifier', () => {
    const off = { enforced: false, enforcedForPublicClients: false, allowPlain: true };
    expect(checkPkceRequest(off, false, 'abc', '')).toEqual({ codeChallenge: 'abc', codeChallengeMethod: 'plain' });
    expect(code(() => checkPkceRequest(off, false, 'abc', 'S512'))).toMatch(/not supported/);
    expect(code(() => checkPkceRequest({ ...off, enforced: true }, false, '', ''))).toMatch(/Clients must include/);
    expect(code(() => checkPkceRequest({ ...off, enforcedForPublicClients: true }, true, '', ''))).toMatch(
      /This client must include/,
    );
    expect(code(() => checkPkceRequest({ ...off, enforcedForPublicClients: true }, false, '', ''))).toBe('ok');
    const verifier = 'v'.repeat(50);
    const s256 = createHash('sha256').update(verifier).digest('base64url');
    expect(code(() => verifyPkce(off, false, s256, 'S256', verifier))).toBe('ok');
    expect(code(() => verifyPkce(off, false, s256, 'S256', 'w'.repeat(50)))).toMatch(/did not match/);
    expect(code(() => verifyPkce(off, false, s256, 'S256', ''))).toMatch(/at least 43/);
    expect(code(() => verifyPkce(off, false, verifier, 'plain', verifier))).toBe('ok');
    expect(code(() => verifyPkce(off, false, '', '', verifier))).toMatch(/Unable to find initial PKCE data/);
  });
});

describe('scopes, audiences, subjects and cookie names', () => {
  it('matches wildcard scopes the way fosite does', () => {
    expect(wildcardScopeStrategy(['foo.*'], 'foo.bar')).toBe(true);
    expect(wildcardScopeStrategy(['foo.*'], 'foo.bar.baz')).toBe(true);
    expect(wildcardScopeStrategy(['foo.*'], 'foo')).toBe(false);
    expect(wildcardScopeStrategy(['foo'], 'foo.bar')).toBe(false);
    expect(wildcardScopeStrategy(['openid'], 'openid')).toBe(true);
  });

  it('allows audiences on the same scheme and host at or below an allowed path', () => {
    const allowed = ['https://api.example/v1/', 'urn:x'];
    expect(firstDisallowedAudience(allowed, ['https://api.example/v1/users', 'urn:x'])).toBeUndefined();
    expect(firstDisallowedAudience(allowed, ['https://api.example/v2'])).toBe('https://api.example/v2');
    expect(firstDisallowedAudience(allowed, ['http://api.example/v1'])).toBe('http://api.example/v1');
  });

  it('computes pairwise subjects from the redirect host and the salt', () => {
    const cfg = { supportedTypes: ['public', 'pairwise'], salt: 'some-salt-value' };
    const c = client({ subjectType: 'pairwise' });
    const expected = createHash('sha256').update('app.example').update('alice').update('some-salt-value').digest('hex');
    expect(obfuscateSubject(cfg, c, 'alice')).toBe(expected);
    expect(obfuscateSubject(cfg, client(), 'alice')).toBe('alice');
    expect(obfuscateSubject(cfg, c, 'alice', 'forced')).toBe('forced');
  });

  it('hashes client ids with MurmurHash3 for the CSRF cookie suffix', () => {
    expect(murmur3('')).toBe(0);
    expect(murmur3('hello')).toBe(613153351);
    expect(murmur3('The quick brown fox jumps over the lazy dog')).toBe(0x2e4ff723);
  });
});
