/**
 * Key generation with jose. Sizes follow Hydra 26: RS256/384/512 are 4096-bit RSA (jwk/generate.go);
 * PS256/384/512 get go-jose's default of 2048 bits, as in Hydra; RSA-OAEP keys are 2048 bits (the
 * default of Hydra's encryption-key helper). EC keys use the curve of the algorithm; EdDSA is Ed25519;
 * ECDH-ES is P-256. Symmetric algorithms (HS256, HS512, …) are refused, as Hydra refuses them.
 */
import { exportJWK, generateKeyPair } from 'jose';
import { type Jwk, normaliseJwk } from './keys.ts';

interface AlgSpec {
  use: 'sig' | 'enc';
  modulusLength?: number;
  crv?: string;
}

const RSA_SIG_BITS = 4096;
const RSA_PSS_BITS = 2048;
const RSA_ENC_BITS = 2048;

const ALGS: Record<string, AlgSpec> = {
  RS256: { use: 'sig', modulusLength: RSA_SIG_BITS },
  RS384: { use: 'sig', modulusLength: RSA_SIG_BITS },
  RS512: { use: 'sig', modulusLength: RSA_SIG_BITS },
  PS256: { use: 'sig', modulusLength: RSA_PSS_BITS },
  PS384: { use: 'sig', modulusLength: RSA_PSS_BITS },
  PS512: { use: 'sig', modulusLength: RSA_PSS_BITS },
  ES256: { use: 'sig' },
  ES384: { use: 'sig' },
  ES512: { use: 'sig' },
  EdDSA: { use: 'sig', crv: 'Ed25519' },
  'RSA-OAEP': { use: 'enc', modulusLength: RSA_ENC_BITS },
  'ECDH-ES': { use: 'enc', crv: 'P-256' },
};

export const isSupportedAlg = (alg: string): boolean => Object.hasOwn(ALGS, alg);

/** The `use` a generated key gets when the caller names none. */
export const defaultUseOf = (alg: string): 'sig' | 'enc' => ALGS[alg]?.use ?? 'sig';

/** Generates a private JWK (callers check the algorithm with `isSupportedAlg` first). */
export async function generateJwk(alg: string, opts: { kid: string; use: string }): Promise<Jwk> {
  const spec = ALGS[alg];
  if (!spec) throw new Error(`unsupported key algorithm ${alg}`);
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(spec.modulusLength ? { modulusLength: spec.modulusLength } : {}),
    ...(spec.crv ? { crv: spec.crv } : {}),
  });
  const exported = await exportJWK(privateKey);
  return normaliseJwk({ ...exported, use: opts.use, kid: opts.kid, alg });
}
