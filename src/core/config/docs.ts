/** Renders the configuration table of docs/configuration.md from the registered parts (`npm run docs:config` writes it). */
import { readFileSync, writeFileSync } from 'node:fs';
import { configLeaves } from './schema.ts';

const START = '<!-- config:start -->';
const END = '<!-- config:end -->';

export function configTable(): string {
  const rows = configLeaves().map((l) => {
    const env = l.env.map((e) => `\`${e}\``).join(', ');
    return `| \`${l.path}\` | ${env} | ${l.node.kind} | ${l.node.defaultText.replaceAll('|', '\\|')} | ${l.node.description.replaceAll('|', '\\|')} |`;
  });
  return ['| key | environment | type | default | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

export function renderConfigPage(page: string): string {
  const a = page.indexOf(START);
  const b = page.indexOf(END);
  if (a < 0 || b < a) throw new Error('docs/configuration.md has no config markers');
  return `${page.slice(0, a + START.length)}\n${configTable()}\n${page.slice(b)}`;
}

/** Rewrites the table of docs/configuration.md from the registered parts (`npm run docs:config`, src/config.ts). */
export function writeConfigDocs(): void {
  const file = new URL('../../../docs/configuration.md', import.meta.url);
  writeFileSync(file, renderConfigPage(readFileSync(file, 'utf8')));
}
