/**
 * Client secret hashing (Hydra's `oauth2.hashers`): PBKDF2-SHA256 (default) or bcrypt. Hashes are
 * self-describing, so changing the algorithm keeps existing secrets verifiable. Verification is
 * constant-time.
 */
import { pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import bcrypt from 'bcryptjs';

const pbkdf2Async = promisify(pbkdf2);

export interface HasherConfig {
  algorithm: 'pbkdf2' | 'bcrypt' | string;
  pbkdf2: { iterations: number };
  bcrypt: { cost: number };
}

export async function hashSecret(secret: string, cfg: HasherConfig): Promise<string> {
  if (cfg.algorithm === 'bcrypt') return bcrypt.hash(secret, cfg.bcrypt.cost);
  const salt = randomBytes(16);
  const dk = await pbkdf2Async(secret, salt, cfg.pbkdf2.iterations, 32, 'sha256');
  return `$pbkdf2-sha256$i=${cfg.pbkdf2.iterations},l=32$${salt.toString('base64url')}$${dk.toString('base64url')}`;
}

export async function verifySecret(secret: string, hash: string): Promise<boolean> {
  if (hash.startsWith('$2')) return bcrypt.compare(secret, hash);
  const m = /^\$pbkdf2-sha256\$i=(\d+),l=(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(hash);
  if (!m) return false;
  const expected = Buffer.from(m[4] as string, 'base64url');
  const dk = await pbkdf2Async(secret, Buffer.from(m[3] as string, 'base64url'), Number(m[1]), Number(m[2]), 'sha256');
  return dk.length === expected.length && timingSafeEqual(dk, expected);
}
