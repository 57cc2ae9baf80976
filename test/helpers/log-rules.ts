/**
 * The log rules every captured line must keep: no `audience: "audit"` anywhere
 * in the entry, and no IPv4 or IPv6 address outside `time`. Shared by the server-level log tests
 * and the authorization-flow log tests.
 */
import { expect } from 'vitest';

const IPV4 = /(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)/;
const IPV6 = /(?<![\w:])\[?(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}\]?(?![\w:])/i;

/** Every deep `audience` value of an entry. */
function audiences(v: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(v)) for (const x of v) audiences(x, out);
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      if (k === 'audience') out.push(x);
      audiences(x, out);
    }
  return out;
}

/** Asserts that one JSON log line has no audit audience and no address. */
export function expectNoAuditAudienceOrAddress(line: string): void {
  const entry = JSON.parse(line) as Record<string, unknown>;
  expect(audiences(entry), line).not.toContain('audit');
  const { time: _t, ...rest } = entry;
  const text = JSON.stringify(rest);
  expect(text, line).not.toMatch(IPV4);
  expect(text, line).not.toMatch(IPV6);
}
