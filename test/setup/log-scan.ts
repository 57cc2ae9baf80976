/**
 * The end-of-run check of the secret ledger (test/helpers/ledger.ts): every log line of every test
 * server against every credential the servers handed out. Both sides are split into runs of
 * token characters, so a credential is found wherever a log line holds it whole (a path segment, a
 * JSON string, a `key=value`), in one pass over the logs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const RUN = /[A-Za-z0-9._~-]{16,}/g;

export interface ScanResult {
  lines: number;
  secrets: number;
  /** Log lines that hold a credential, with the credential masked, and the file they are in. */
  leaks: Array<{ file: string; line: string }>;
}

export function scanForSecrets(dir: string): ScanResult {
  const files = readdirSync(dir);
  const secrets = new Set<string>();
  for (const f of files.filter((x) => x.startsWith('secrets-'))) {
    for (const s of readFileSync(join(dir, f), 'utf8').split('\n')) {
      for (const run of s.match(RUN) ?? []) secrets.add(run);
    }
  }
  let lines = 0;
  const leaks: ScanResult['leaks'] = [];
  for (const f of files.filter((x) => x.startsWith('log-'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (!line) continue;
      lines++;
      const hits = (line.match(RUN) ?? []).filter((run) => secrets.has(run));
      if (hits.length) {
        let masked = line;
        for (const h of hits) masked = masked.replaceAll(h, `<credential ${h.slice(0, 4)}…>`);
        leaks.push({ file: f, line: masked.slice(0, 500) });
      }
    }
  }
  return { lines, secrets: secrets.size, leaks };
}
