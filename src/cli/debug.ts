/**
 * `gatehouse debug challenge <value>` and `gatehouse debug encrypted-session <value>`.
 * Both read `secrets.system` (every rotation entry) from the usual configuration and
 * print JSON; a value that is tampered with, foreign or made with an unknown secret exits 1 with one
 * line. `-` reads the value from standard input.
 */
import type { Command } from 'commander';
import { type GlobalFlags, run } from './common.ts';

export function registerDebug(program: Command): void {
  const d = program.command('debug').description('Decode gatehouse values (enterprise debugging)');
  d.command('challenge')
    .argument('<value>', 'a login, consent or logout challenge or verifier (`-` reads stdin)')
    .description('Decrypt a challenge or verifier and print the flow it carries as JSON')
    .action((value: string) =>
      run(async () => {
        const { decodeChallenge, readValue, secretsOf } = await import('./debug-run.ts');
        const out = await decodeChallenge(secretsOf(program.opts<GlobalFlags>()), readValue(value));
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      }),
    );
  d.command('encrypted-session')
    .argument('<value>', 'an encrypted session value as stored in the database (`-` reads stdin)')
    .description('Decrypt session data kept in the database (consent session claims, token sessions)')
    .action((value: string) =>
      run(async () => {
        const { decryptSession, readValue, secretsOf } = await import('./debug-run.ts');
        const out = decryptSession(secretsOf(program.opts<GlobalFlags>()), readValue(value));
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      }),
    );
}
