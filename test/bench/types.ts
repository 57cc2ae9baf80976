/** A benchmark scenario: requests fired at a running gatehouse by autocannon on loopback. */
import type { TestServerLike } from './server.ts';

export interface BenchRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Scenario {
  name: string;
  listener: 'public' | 'admin';
  /** Config overrides: the scenario then runs on its own server (e.g. stateless JWT access tokens). */
  overrides?: Record<string, unknown>;
  /** Prepares data and returns the requests autocannon cycles through. */
  setup(server: TestServerLike): Promise<BenchRequest[]>;
  /** Optional end-to-end figure measured after the load (e.g. webhook deliveries per second). */
  report?(server: TestServerLike): Promise<Record<string, number | string>>;
}
