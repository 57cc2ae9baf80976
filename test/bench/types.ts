/** Benchmark scenarios: gatehouse paired with a peer doing the same work, measured in the same run. */
import type { Proc } from './proc.ts';

export interface BenchRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  /** A fixed body, or one built per request (n counts the requests of this run from 0). */
  body?: string | ((n: number) => string);
  /**
   * Replaces path, headers and body per request (n counts the requests of this run from 0, over
   * all connections): spreads consecutive requests over targets instead of each connection
   * cycling through the list in step with the others.
   */
  each?: (n: number) => { path: string; headers: Record<string, string>; body: string };
}

/** One side of a scenario: where it runs and the requests autocannon cycles through. */
export interface Side<P extends Proc = Proc> {
  /** The URL the requests go to (the listener of the process). */
  url(p: P): string;
  /** Prepares data (through the process's own API) and returns the requests; checks that one works. */
  setup(p: P): Promise<BenchRequest[]>;
  /**
   * Instead of autocannon: runs `connections` concurrent loops of a multi-request unit of work (a
   * whole authorization-code flow, a revocation) for about `seconds` and returns what it measured;
   * "requests" are then those units (req/s, latencies and SQL statements are per unit). `warmup`:
   * the run before the measured rounds (a one-shot unit may do less then).
   */
  drive?(p: P, o: { seconds: number; connections: number; warmup: boolean }): Promise<DriveResult>;
  /**
   * Waits until the work the load left behind in the process is done (a webhook backlog), so that
   * the next round of either side does not share the machine with it. Called before every warm-up
   * and round.
   */
  settle?(p: P): Promise<void>;
  /** Optional end-to-end figures measured after the load (e.g. webhook deliveries). */
  report?(p: P): Promise<Record<string, number | string>>;
}

export interface DriveResult {
  /** Units of work completed. */
  units: number;
  /** Units that failed (an unexpected status on any step). */
  errors: number;
  /** Latency of each completed unit, ms. */
  latencies: number[];
  /** The p50 and p99 when the driver measured them itself (autocannon), instead of `latencies`. */
  p50?: number;
  p99?: number;
  /** Wall time of the run, ms. */
  elapsedMs: number;
}

export type PeerKind = 'oidc-provider' | 'jackson';

export interface Scenario {
  name: string;
  /** Concurrent connections (default BENCH_CONNECTIONS). */
  connections?: number;
  /** gatehouse config overrides (a process per distinct set; none = the defaults). */
  overrides?: Record<string, unknown>;
  /**
   * A gatehouse process (and so a fresh database) of its own, for a scenario whose figures depend
   * on what the database already holds (the growth and volume scenarios).
   */
  fresh?: boolean;
  /**
   * With `fresh`: scenarios of the same group share one fresh process (and whatever a fixture loaded
   * into its database), in the order they are listed; without it each fresh scenario has its own.
   */
  group?: string;
  /**
   * Rounds of this scenario whatever BENCH_ROUNDS says (also in the smoke run), for a scenario
   * whose rounds are successive steps rather than repetitions (the growth scenario).
   */
  rounds?: number;
  gatehouse: Side;
  /** The peer doing the same work; the ratio is gatehouse ÷ peer req/s. */
  peer?: { kind: PeerKind; side: Side };
}
