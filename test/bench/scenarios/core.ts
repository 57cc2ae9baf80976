import type { Scenario } from '../types.ts';

/** The database round trip of the readiness check (a query plus the migration ledger). */
export const scenarios: Scenario[] = [
  {
    name: 'GET /health/ready (admin, 2 queries)',
    listener: 'admin',
    setup: async () => [{ path: '/health/ready' }],
  },
];
