/**
 * Durations in Hydra's Go form (`1h30m`, `10s`, `500ms`), plus `d` for days. `-1` means "never"
 * where a key allows it (Hydra's `ttl.refresh_token: -1`). Parsed to milliseconds.
 */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/gy;

export function parseDuration(input: string | number): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) ? input : undefined;
  const s = input.trim();
  if (s === '0') return 0;
  if (s === '-1') return -1;
  if (s === '') return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (;;) {
    const m = PART.exec(s);
    if (!m) break;
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    consumed = PART.lastIndex;
  }
  if (consumed !== s.length) return undefined;
  return Math.round(total);
}

/**
 * Go's `time.ParseDuration` (what Hydra accepts on the wire for client lifespans): an optional sign,
 * then number+unit pairs with units ns, us/µs, ms, s, m, h, or a bare `0`. No days. Milliseconds,
 * rounded; undefined when the text is not a Go duration.
 */
export function parseGoDuration(input: string): number | undefined {
  let s = input;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s[0] === '-') sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') return undefined;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y; // sticky: each pair must follow the last
  let total = 0;
  let consumed = 0;
  for (;;) {
    const m = part.exec(s);
    if (!m) break;
    const unit = m[2] === 'μs' ? 'µs' : (m[2] as string);
    total += Number(m[1]) * (UNIT_MS[unit] as number);
    consumed = part.lastIndex;
  }
  if (consumed !== s.length) return undefined;
  // Go's Duration is int64 nanoseconds: anything longer overflows ("invalid duration").
  if (total > 9_223_372_036_854) return undefined;
  const ms = Math.round(total) * sign;
  return Object.is(ms, -0) ? 0 : ms;
}

/** Go-style rendering used on the wire (`1h0m0s`, `30m0s`, `10s`, `500ms`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const neg = ms < 0;
  let rest = Math.abs(ms);
  if (rest < 1000) return `${neg ? '-' : ''}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = rest / 1000;
  let out = '';
  if (h) out += `${h}h${m}m`;
  else if (m) out += `${m}m`;
  out += `${Number.isInteger(s) ? s : s.toFixed(3).replace(/0+$/, '')}s`;
  return (neg ? '-' : '') + out;
}
