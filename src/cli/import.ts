/**
 * Hydra's `import` commands over the admin API:
 * - `import oauth2-client [file…]`: each file (or stdin when none is given, or `-`) holds a JSON
 *   array of clients (a single client object is accepted too); every client is created with
 *   `POST /admin/clients`; existing clients are not updated (that fails, as in Hydra).
 * - `import jwk <set> [file…]`: each file (or stdin) holds a JSON Web Key (or a key set), or a PEM /
 *   DER private or public key; each key is stored with `PUT /admin/keys/<set>/<kid>` (the set is
 *   created when missing). `--alg` and `--use` fill in what the key does not say; a missing `kid`
 *   becomes a random UUID.
 * What was imported is printed (`--format`); each failure is one `error: <source>: …` line on
 * stderr and the exit code is 1.
 */
import { createPrivateKey, createPublicKey, type KeyObject, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { type Client, many, one } from './clients.ts';
import { run, verb } from './common.ts';
import { adminApiOf, adminRequest, endpointOption } from './endpoint.ts';
import { formatOf, formatOption, type Printable, printRow, printTable, quietOption } from './printing.ts';

/** The options commander parsed. */
interface Opts {
  endpoint?: string;
  token?: string;
  format?: string;
  quiet?: boolean;
  use?: string;
  alg?: string;
}

/** A JSON Web Key (RFC 7517 §4) as read from a file and returned by the admin API. */
interface Jwk {
  kty?: string;
  kid?: string;
  alg?: string;
  use?: string;
  [member: string]: unknown;
}

/** The sources of a command: the files, or stdin when none are given (`-` is stdin as well). */
function readSources(files: string[]): { src: string; content: Buffer }[] {
  const list = files.length ? files : ['-'];
  return list.map((f) => {
    const src = f === '-' ? 'STDIN' : f;
    try {
      return { src, content: readFileSync(f === '-' ? 0 : f) };
    } catch (e) {
      throw new Error(`could not open ${src}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  });
}

const failuresError = (failed: string[]) => new Error(failed.join('\nerror: '));

function registerImportClients(imp: Command): void {
  imp
    .command('oauth2-client')
    .aliases(['client', 'clients', 'oauth2-clients'])
    .argument('[files...]', 'JSON files, each an array of clients (stdin when none)')
    .description('Import OAuth 2.0 clients from files or stdin (existing clients are not updated)')
    .addOption(endpointOption())
    .addOption(formatOption())
    .addOption(quietOption())
    .action((files: string[], o: Opts) =>
      run(async () => {
        const api = adminApiOf(o);
        const imported: Client[] = [];
        const failed: string[] = [];
        for (const { src, content } of readSources(files)) {
          const text = content.toString('utf8').trim();
          if (!text) continue; // an empty stdin imports nothing, as in Hydra
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch (e) {
            throw new Error(`could not decode JSON from ${src}: ${(e as Error).message}`);
          }
          const clients = Array.isArray(parsed) ? parsed : [parsed];
          for (const [i, c] of clients.entries()) {
            if (typeof c !== 'object' || c === null || Array.isArray(c)) {
              failed.push(`${src}[${i}]: not a client object`);
              continue;
            }
            try {
              const r = (await adminRequest(api, 'POST', '/admin/clients', c)).body as Client;
              const sent = c as Client;
              if (!r.client_secret && sent.client_secret) r.client_secret = sent.client_secret;
              imported.push(r);
            } catch (e) {
              failed.push(`${src}${clients.length > 1 ? `[${i}]` : ''}: ${(e as Error).message}`);
            }
          }
        }
        if (imported.length === 1) printRow(formatOf(o), one(imported[0] as Client));
        else printTable(formatOf(o), many(imported));
        if (failed.length) throw failuresError(failed);
      }),
    );
}

/** The JSON Web Keys in a source: a JWK, a JWK set, or a PEM/DER private or public key. */
function keysOf(content: Buffer): Jwk[] {
  const text = content.toString('utf8').trim();
  if (text.startsWith('{')) {
    const j = JSON.parse(text) as Jwk;
    if (Array.isArray(j.keys)) return j.keys as Jwk[];
    if (typeof j.kty === 'string') return [j];
    throw new Error('the JSON is neither a JSON Web Key nor a key set');
  }
  const pem = text.includes('-----BEGIN');
  const input = pem ? text : content;
  let key: KeyObject;
  try {
    key = pem ? createPrivateKey(input) : createPrivateKey({ key: content, format: 'der', type: 'pkcs8' });
  } catch {
    try {
      key = pem ? createPublicKey(input) : createPublicKey({ key: content, format: 'der', type: 'spki' });
    } catch {
      throw new Error('could not decode a private or public key (JWK, PEM or DER)');
    }
  }
  return [key.export({ format: 'jwk' }) as Jwk];
}

const JWK_HEADER = ['SET ID', 'KEY ID', 'ALGORITHM', 'USE'];
const jwkPrintable = (set: string, keys: Jwk[]): Printable => ({
  header: JWK_HEADER,
  rows: keys.map((k) => [set, k.kid ?? '', k.alg ?? '', k.use ?? '']),
  value: { set, keys },
  ids: keys.map((k) => k.kid ?? ''),
});

function registerImportJwk(imp: Command): void {
  imp
    .command('jwk')
    .aliases(['jwks'])
    .argument('<set>', 'key set to add the keys to (created when missing)')
    .argument('[files...]', 'JWK, JWK set, PEM or DER files (stdin when none)')
    .description('Import JSON Web Keys (JWK, or PEM/DER keys) from files or stdin into a key set')
    .option('--use <use>', 'the "use" of keys that do not define one (sig or enc)', 'sig')
    .option('--alg <alg>', 'the "alg" of keys that do not define one (required for PEM/DER keys)')
    .addOption(endpointOption())
    .addOption(formatOption())
    .addOption(quietOption())
    .action((set: string, files: string[], o: Opts) =>
      run(async () => {
        const api = adminApiOf(o);
        const prepared: { src: string; key: Jwk & { kid: string } }[] = [];
        for (const { src, content } of readSources(files)) {
          let keys: Jwk[];
          try {
            keys = keysOf(content);
          } catch (e) {
            throw new Error(`${src}: ${(e as Error).message}`);
          }
          for (const k of keys) {
            const key = { ...k, kid: k.kid || randomUUID(), alg: k.alg || o.alg, use: k.use || o.use };
            if (!key.alg) throw new Error(`${src}: --alg is required when the imported key does not define "alg"`);
            if (!key.use) throw new Error(`${src}: --use is required when the imported key does not define "use"`);
            prepared.push({ src, key });
          }
        }
        const imported: Jwk[] = [];
        const failed: string[] = [];
        for (const { src, key } of prepared) {
          try {
            const path = `/admin/keys/${encodeURIComponent(set)}/${encodeURIComponent(key.kid)}`;
            imported.push((await adminRequest(api, 'PUT', path, key)).body as Jwk);
          } catch (e) {
            failed.push(`${src}: ${(e as Error).message}`);
          }
        }
        printTable(formatOf(o), jwkPrintable(set, imported));
        if (failed.length) throw failuresError(failed);
      }),
    );
}

export function registerImport(program: Command): void {
  const imp = verb(program, 'import', 'Import resources from files or stdin through the admin API');
  registerImportClients(imp);
  registerImportJwk(imp);
}
