/** Renders the README configuration table from the schema (`npm run docs:config` writes it). */
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

export function renderReadme(readme: string): string {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error('README.md has no config markers');
  return `${readme.slice(0, a + START.length)}\n${configTable()}\n${readme.slice(b)}`;
}

if (import.meta.main) {
  const file = new URL('../../../README.md', import.meta.url);
  writeFileSync(file, renderReadme(readFileSync(file, 'utf8')));
}
