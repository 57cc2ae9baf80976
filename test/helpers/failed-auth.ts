/**
 * Two processes on one database with a failed-authentication limit of 3 per client id (none per
 * address, a 1-minute window, a manual clock), two client_credentials clients, and the token
 * request they make with any id and secret (client_secret_basic), answered as `send` reads it.
 */
import { manualClock } from '../../src/core/clock.ts';
import { startTestServer, type TestServer } from './apps.ts';
import { send } from './fuzz.ts';
import { type CreatedClient, createClient } from './oauth2.ts';

export const basicToken = (s: TestServer, id: string, secret: string) =>
  send(`${s.publicUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`,
    },
    body: 'grant_type=client_credentials',
  });

export interface FailedAuthPair {
  clock: ReturnType<typeof manualClock>;
  s: TestServer;
  other: TestServer;
  a: CreatedClient;
  b: CreatedClient;
  /** Closes the second process first (it shares the first one's database), then the owner. */
  close(): Promise<void>;
}

export async function failedAuthPair(): Promise<FailedAuthPair> {
  const clock = manualClock(new Date('2030-01-01T00:00:10Z'));
  const overrides = {
    'rate_limit.failed_auth.per_credential': 3,
    'rate_limit.failed_auth.per_address': 0,
    'rate_limit.failed_auth.window': '1m',
  };
  const s = await startTestServer({ overrides, clock });
  const other = await startTestServer({ overrides, clock, database: s.database }).catch(async (e) => {
    await s.close();
    throw e;
  });
  const a = await createClient(s, { grant_types: ['client_credentials'] });
  const b = await createClient(s, { grant_types: ['client_credentials'] });
  return {
    clock,
    s,
    other,
    a,
    b,
    async close() {
      await other.close();
      await s.close();
    },
  };
}
