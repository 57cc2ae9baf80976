import { describe, expect, it } from 'vitest';
import { generateJwk } from '../../../src/oauth2/jwk/generate.ts';
import {
  canSign,
  hasPrivateMaterial,
  invalidJwkReason,
  normaliseJwk,
  signingAlgOf,
  toPublicJwk,
} from '../../../src/oauth2/jwk/keys.ts';

describe('JWK helpers', () => {
  it('keeps known members in go-jose order and drops the rest', () => {
    const k = normaliseJwk({
      kid: 'a',
      kty: 'EC',
      x: 'X',
      y: 'Y',
      crv: 'P-256',
      ext: true,
      key_ops: ['sign'],
      alg: '',
    });
    expect(Object.keys(k)).toEqual(['kty', 'kid', 'crv', 'x', 'y']);
  });

  it('strips every private member from the public part and has none for symmetric keys', async () => {
    const rsa = await generateJwk('PS256', { kid: 'r', use: 'sig' });
    expect(hasPrivateMaterial(rsa)).toBe(true);
    const pub = toPublicJwk(rsa)!;
    expect(Object.keys(pub)).toEqual(['use', 'kty', 'kid', 'alg', 'n', 'e']);
    expect(hasPrivateMaterial(pub)).toBe(false);
    expect(toPublicJwk({ kty: 'oct', k: 'abc', kid: 's' })).toBeUndefined();
    expect(hasPrivateMaterial({ kty: 'oct', k: 'abc' })).toBe(true);
  });

  it('validates key material', async () => {
    const ec = await generateJwk('ES256', { kid: 'e', use: 'sig' });
    expect(invalidJwkReason(ec)).toBeUndefined();
    expect(invalidJwkReason(toPublicJwk(ec)!)).toBeUndefined();
    expect(invalidJwkReason({ ...ec, x: 'AAAA' })).toBeDefined();
    expect(invalidJwkReason({ kty: 'oct' })).toBeDefined();
    expect(invalidJwkReason({ kty: 'nope' })).toMatch(/unknown json web key type/);
  });

  it('picks keys that can sign and their algorithm', async () => {
    const ed = await generateJwk('EdDSA', { kid: 'd', use: 'sig' });
    expect(canSign(ed)).toBe(true);
    expect(canSign(toPublicJwk(ed)!)).toBe(false);
    expect(canSign(await generateJwk('ECDH-ES', { kid: 'x', use: 'enc' }))).toBe(false);
    expect(canSign({ kty: 'oct', k: 'abc' })).toBe(false);
    const { alg: _, ...noAlg } = ed;
    expect(signingAlgOf(noAlg)).toBe('EdDSA');
    expect(signingAlgOf({ kty: 'EC', crv: 'P-521' })).toBe('ES512');
  });
});
