/**
 * Progress of long CLI work on stderr (`janitor`, `revoke login-sessions`): on a terminal a bar with
 * the rows done, the total due and the rate (cli-progress); elsewhere (logs, CI) plain lines, at
 * most one a second, one when the part being worked on changes, and one at the end.
 */
import { SingleBar } from 'cli-progress';

export interface Progress {
  /** `n` more rows done, in `part` (a table name; optional). */
  add(n: number, part?: string): void;
  stop(): void;
}

export function startProgress(label: string, total: number, out: NodeJS.WriteStream = process.stderr): Progress {
  const started = performance.now();
  let done = 0;
  const rate = () => Math.round(done / Math.max((performance.now() - started) / 1000, 0.001));
  if (out.isTTY) {
    const bar = new SingleBar({
      format: `${label} [{bar}] {value}/{total} rows | {rate} rows/s | {part}`,
      stream: out,
    });
    bar.start(total, 0, { part: '', rate: 0 });
    return {
      add(n, part = '') {
        done += n;
        bar.increment(n, { part, rate: rate() });
      },
      stop: () => bar.stop(),
    };
  }
  let lastLine = 0;
  let current: string | undefined;
  let inPart = 0;
  const line = () =>
    out.write(
      `${label}: ${current ? `${current}: ${inPart} deleted (` : ''}${done}/${total} rows, ${rate()} rows/s${current ? ')' : ''}\n`,
    );
  let dirty = false;
  return {
    add(n, part) {
      if (dirty && part !== current) line();
      if (part !== current) inPart = 0;
      current = part;
      inPart += n;
      done += n;
      dirty = true;
      if (performance.now() - lastLine >= 1000) {
        lastLine = performance.now();
        line();
        dirty = false;
      }
    },
    stop() {
      if (dirty) line();
    },
  };
}
