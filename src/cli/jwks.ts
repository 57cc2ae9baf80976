/**
 * Hydra's JSON Web Key commands, against the admin API (`-e/--endpoint` or `ORY_SDK_URL`):
 * `create jwks <set> [kid]`, `get jwks <set…>`, `delete jwks <set…>` (`jwk` is an alias, as in Hydra).
 * Output is JSON shaped like Hydra's: each key carries its `set`.
 */
import { type Command, Option } from 'commander';
import { run } from './common.ts';
import { adminHeaders, send } from './endpoint.ts';
import { FORMATS, type Format, printTable } from './printing.ts';

interface Key {
  kid?: string;
  [member: string]: unknown;
}

const PRIVATE = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];

/** The `create`/`get`/`delete` verb groups are shared with other command files: reuse one when it exists. */
function verb(program: Command, name: string, description: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(description);
}

function adminUrl(endpoint: string | undefined, path: string): URL {
  if (!endpoint) throw new Error('no admin endpoint: pass --endpoint or set ORY_SDK_URL');
  let base: URL;
  try {
    base = new URL(endpoint);
  } catch {
    throw new Error(`the endpoint ${JSON.stringify(endpoint)} is not a URL`);
  }
  base.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
  return base;
}

/** One admin API call; an error answer becomes one line: status, Hydra's error and description. */
async function call(o: EndpointFlags, method: string, path: string, body?: unknown): Promise<unknown> {
  const url = adminUrl(o.endpoint, path);
  const r = await send(
    url,
    {
      method,
      headers: adminHeaders(o.token?.trim(), body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    },
    `the admin API at ${url.origin}`,
  );
  if (!r.ok) {
    let detail = r.text.trim().split('\n')[0] ?? '';
    if (typeof r.body === 'object' && r.body !== null) {
      const e = r.body as { error?: unknown; error_description?: unknown };
      detail = [e.error, e.error_description].filter((x) => typeof x === 'string' && x).join(': ');
    }
    throw new Error(`${method} ${url.pathname} answered ${r.status}${detail ? `: ${detail}` : ''}`);
  }
  return r.body;
}

const keysPath = (set: string) => `/admin/keys/${encodeURIComponent(set)}`;
const withSet = (set: string, keys: Key[], onlyPublic: boolean) =>
  keys.map((k) => ({
    set,
    ...Object.fromEntries(Object.entries(k).filter(([m]) => !(onlyPublic && PRIVATE.includes(m)))),
  }));
/**
 * Without `--format`, the set as indented JSON (gatehouse's output before `--format` existed);
 * with it, Hydra's formats: a `SET ID / KEY ID / ALGORITHM / USE` table, json, json-pretty, quiet (kids).
 */
function print(v: { set?: string; keys?: Key[] } | Key, format: string | undefined) {
  if (!format) {
    process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
    return;
  }
  const keys = (Array.isArray((v as { keys?: Key[] }).keys) ? (v as { keys: Key[] }).keys : [v]) as Key[];
  printTable(format as Format, {
    header: ['SET ID', 'KEY ID', 'ALGORITHM', 'USE'],
    rows: keys.map((k) => [String(k.set ?? ''), String(k.kid ?? ''), String(k.alg ?? ''), String(k.use ?? '')]),
    value: v,
    ids: keys.map((k) => String(k.kid ?? '')),
  });
}

const jwkFormatOption = () =>
  new Option('--format <format>', 'output format (default: the set as indented JSON)').choices(
    FORMATS as unknown as string[],
  );

interface EndpointFlags {
  endpoint?: string;
  token?: string;
  public?: boolean;
  format?: string;
}

const endpointOption = (c: Command, withFormat = true) => {
  c.addOption(new Option('-e, --endpoint <url>', 'admin API URL').env('ORY_SDK_URL'));
  return withFormat ? c.addOption(jwkFormatOption()) : c;
};

export function registerJwks(program: Command): void {
  const create = verb(program, 'create', 'Create resources through the admin API');
  endpointOption(
    create
      .command('jwks <set> [kid]')
      .alias('jwk')
      .description('Generate a JSON Web Key and add it to a set (it becomes the newest key)')
      .option(
        '--alg <alg>',
        'RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, RSA-OAEP, ECDH-ES',
        'RS256',
      )
      .option('--use <use>', 'sig or enc (default: enc for RSA-OAEP and ECDH-ES, else sig)')
      .option('--kid <kid>', 'key id (default: a UUID)')
      .option('--public', 'print only the public parts'),
  ).action((set: string, kidArg: string | undefined, o: EndpointFlags & { alg: string; use?: string; kid?: string }) =>
    run(async () => {
      const out = (await call(o, 'POST', keysPath(set), {
        alg: o.alg,
        use: o.use ?? '',
        kid: o.kid ?? kidArg ?? '',
      })) as { keys: Key[] };
      print({ set, keys: withSet(set, out.keys, !!o.public) }, o.format);
    }),
  );

  const get = verb(program, 'get', 'Read resources through the admin API');
  endpointOption(
    get
      .command('jwks <sets...>')
      .alias('jwk')
      .description('Print one or more JSON Web Key sets (private keys included unless --public)')
      .option('--public', 'print only the public parts'),
  ).action((sets: string[], o: EndpointFlags) =>
    run(async () => {
      const keys = [];
      for (const set of sets) {
        const out = (await call(o, 'GET', keysPath(set))) as { keys: Key[] };
        keys.push(...withSet(set, out.keys, !!o.public));
      }
      // Hydra prints a lone key as an object, several as a collection.
      print(keys.length === 1 ? (keys[0] as Key) : { ...(sets.length === 1 ? { set: sets[0] } : {}), keys }, o.format);
    }),
  );

  const del = verb(program, 'delete', 'Delete resources through the admin API');
  endpointOption(
    del.command('jwks <sets...>').alias('jwk').description('Delete one or more JSON Web Key sets'),
    false,
  ).action((sets: string[], o: EndpointFlags) =>
    run(async () => {
      for (const set of sets) {
        await call(o, 'DELETE', keysPath(set));
        process.stdout.write(`${set}\n`);
      }
    }),
  );
}
