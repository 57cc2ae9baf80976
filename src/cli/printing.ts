/**
 * Output of the admin-API commands, as Hydra's CLI prints it (ory/x cmdx): `--format table` (the
 * default: a tab-aligned table, one `HEADER\tvalue` line per field for a single item), `json`,
 * `json-pretty`, or `quiet` (ids only).
 */
import { Option } from 'commander';

export const FORMATS = ['table', 'json', 'json-pretty', 'quiet'] as const;
export type Format = (typeof FORMATS)[number];

export const formatOption = () =>
  new Option('--format <format>', 'output format').choices(FORMATS as unknown as string[]).default('table');
export const quietOption = () => new Option('-q, --quiet', 'print only ids (same as --format quiet)');

export const formatOf = (o: { format?: string; quiet?: boolean }): Format =>
  o.quiet ? 'quiet' : ((o.format as Format | undefined) ?? 'table');

/** Go's encoding/json escapes <, >, & and the line separators; so do we, for byte-equal output. */
function goJson(value: unknown, pretty: boolean): string {
  return `${JSON.stringify(value, null, pretty ? 2 : undefined).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )}\n`;
}

/**
 * Go's text/tabwriter with (minwidth 0, tabwidth 8, padding 1, padchar '\t'): every cell is
 * tab-terminated; a column is as wide as its widest cell in each run of lines that have it,
 * rounded up to a tab stop, and cells are padded with tabs.
 */
export function tabwrite(rows: string[][], tab = 8, padding = 1): string {
  const widths = rows.map((r) => r.map(() => 0));
  const format = (col: number, start: number, end: number) => {
    let i = start;
    while (i < end) {
      if ((rows[i] as string[]).length <= col) {
        i++;
        continue;
      }
      let j = i;
      let w = 0;
      while (j < end && (rows[j] as string[]).length > col) {
        w = Math.max(w, [...((rows[j] as string[])[col] as string)].length + padding);
        j++;
      }
      w = Math.ceil(w / tab) * tab;
      for (let k = i; k < j; k++) (widths[k] as number[])[col] = w;
      format(col + 1, i, j);
      i = j;
    }
  };
  format(0, 0, rows.length);
  return rows
    .map(
      (r, i) =>
        `${r.map((cell, c) => cell + '\t'.repeat(Math.ceil((((widths[i] as number[])[c] as number) - [...cell].length) / tab))).join('')}\n`,
    )
    .join('');
}

export interface Printable {
  header: string[];
  /** One row per item. */
  rows: string[][];
  /** What json and json-pretty print. */
  value: unknown;
  /** What quiet prints, one per line. */
  ids: string[];
  /** Extra table lines after the rows (pagination). */
  footer?: string[][];
}

/** A single item: `HEADER\tvalue` lines. */
export function printRow(format: Format, p: Printable, out: NodeJS.WritableStream = process.stdout): void {
  if (format === 'json' || format === 'json-pretty') out.write(goJson(p.value, format === 'json-pretty'));
  else if (format === 'quiet') out.write(`${p.ids[0] ?? ''}\n`);
  else out.write(tabwrite(p.header.map((h, i) => [h, p.rows[0]?.[i] ?? ''])));
}

/** A collection: a header line, then one line per item (and the footer). */
export function printTable(format: Format, p: Printable, out: NodeJS.WritableStream = process.stdout): void {
  if (format === 'json' || format === 'json-pretty') out.write(goJson(p.value, format === 'json-pretty'));
  else if (format === 'quiet') out.write(p.ids.length ? p.ids.map((id) => `${id}\n`).join('') : '\n');
  else out.write(tabwrite([p.header, ...p.rows, ...(p.footer ?? [])]));
}
