// autocannon ships no types; only the fields the bench runner reads are declared.
declare module 'autocannon' {
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    /** Stop after this many requests (duration is then ignored). */
    amount?: number;
    /** Requests per second over all connections (unset: as fast as answered). */
    overallRate?: number;
    requests?: Array<{
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (req: Record<string, unknown>) => Record<string, unknown>;
    }>;
  }
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    total: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
  }
  /** The run: awaitable for its result, and an emitter of each response (`'response'`). */
  interface Instance extends PromiseLike<Result> {
    on(event: 'response', listener: () => void): Instance;
  }
  function autocannon(opts: Options): Instance;
  export default autocannon;
}
