/**
 * Wake-ups of lingering senders by the commits of their directory's events, inside one process.
 *
 * A real-time sender that found nothing left to send lingers for more events (delivery.ts). When
 * the same process also applies the directory's changes (`serve all` with the worker in process, or
 * `controllers()`), the applier tells it here as soon as a change with events has committed, and
 * the sender reads at once instead of at its next poll. Its polls then only catch the events of
 * writers in other processes, and can be far apart: under steady traffic most of a lingering
 * sender's polls found nothing and cost the process (a query each) more than the writes they wait
 * for.
 *
 * A sender arms a ticket before each read of its queue: a commit signalled after that (even while
 * the read runs) fires the ticket, so the wait after an empty read ends at once and no commit is
 * missed between a read and its wait.
 */

/** How long after this process's last signalled commit it counts as a writer of directories. */
const WRITER_FOR_MS = 60_000;

export interface WakeTicket {
  /** Waits until a commit of the directory is signalled, `ms` pass, or `signal` aborts. */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  /** Stops listening (after a read that found events, or after the wait). */
  done(): void;
}

export class Wakeups {
  private readonly armed = new Map<string, Set<() => void>>();
  private lastCommit = Number.NEGATIVE_INFINITY;

  /** A change with events of `directoryId` has committed (called after the commit, never before). */
  committed(directoryId: string): void {
    this.lastCommit = performance.now();
    const fire = this.armed.get(directoryId);
    if (!fire) return;
    this.armed.delete(directoryId);
    for (const f of fire) f();
  }

  /**
   * Whether this process applied changes with events lately: its senders are then woken by those
   * commits, and poll only for other processes' writes. A worker of its own (`gatehouse worker`)
   * never is.
   */
  writer(): boolean {
    return performance.now() - this.lastCommit < WRITER_FOR_MS;
  }

  /** Listens for the directory's next commit, from now on. */
  arm(directoryId: string): WakeTicket {
    let fired = false;
    let wake: (() => void) | undefined;
    const fire = () => {
      fired = true;
      wake?.();
    };
    let set = this.armed.get(directoryId);
    if (!set) {
      set = new Set();
      this.armed.set(directoryId, set);
    }
    set.add(fire);
    const done = () => {
      const s = this.armed.get(directoryId);
      if (!s?.delete(fire) || s.size) return;
      this.armed.delete(directoryId);
    };
    const wait = (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        if (fired || signal?.aborted) return resolve();
        const end = () => {
          clearTimeout(t);
          signal?.removeEventListener('abort', end);
          wake = undefined;
          resolve();
        };
        const t = setTimeout(end, ms);
        wake = end;
        signal?.addEventListener('abort', end, { once: true });
      });
    return { wait, done };
  }
}
