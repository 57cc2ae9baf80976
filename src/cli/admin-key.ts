/**
 * `gatehouse admin-key hash [key]`: the `serve.admin.auth.api_keys` entry of an admin API key
 * (`sha256:<hex>[:family,…]`), so that the configuration never holds the key itself. The key comes
 * from the argument or, when absent, from stdin (out of the shell's history and the process list).
 * `--generate` makes a new random key and prints it with its entry; the key is shown only then.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { collect, run } from './common.ts';

interface Flags {
  generate?: boolean;
  scope?: string[];
  json?: boolean;
}

async function hashCommand(given: string | undefined, o: Flags): Promise<void> {
  // The composition root registers the domains' families (`--scope dsync`) beside the core's.
  await import('../config.ts');
  const { generateAdminKey, hashAdminKey, parseAdminKeyEntry } = await import('../core/http/admin-auth.ts');
  if (given !== undefined && o.generate) throw new Error('give a key or --generate, not both');
  const key = o.generate ? generateAdminKey() : (given ?? readFileSync(0, 'utf8')).trim();
  if (!key) throw new Error('no key: give one as the argument or on stdin, or use --generate');
  const scope = o.scope ?? [];
  const entry = `${hashAdminKey(key)}${scope.length ? `:${scope.join(',')}` : ''}`;
  const problem = parseAdminKeyEntry(entry);
  if (typeof problem === 'string') throw new Error(`--scope ${problem.replace(/^names /, '')}`);
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ ...(o.generate ? { key } : {}), entry, id: problem.id })}\n`);
  } else if (o.generate) {
    process.stdout.write(`key:   ${key}\nentry: ${entry}\n`);
  } else {
    process.stdout.write(`${entry}\n`);
  }
}

export function registerAdminKey(program: Command): void {
  program
    .command('admin-key')
    .description('Admin API keys (serve.admin.auth.api_keys)')
    .command('hash [key]')
    .description('Print the serve.admin.auth.api_keys entry of a key (read from stdin when not given)')
    .option('--generate', 'make a new random key and print it with its entry')
    .option('--scope <families>', 'allow only these route families (repeat or comma-separate; none: all)', collect)
    .option('--json', 'print {key?, entry, id} as JSON')
    .action((key: string | undefined, o: Flags) => run(() => hashCommand(key, o)));
}
