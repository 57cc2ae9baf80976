/**
 * Wake-ups of lingering senders by the commits of their directory's events, inside one process.
 *
 * A real-time sender that found nothing left to send lingers for more events (delivery.ts). When
 * the same process also applies the directory's changes (`serve all` with the worker in process, or
 * `controllers()`), the applier tells it here as soon as a change with events has committed, and
 * hands over those events as they were committed: the sender sends them at once, without reading
 * its queue, when they follow the last event it sent. Its polls then only catch the events of
 * writers in other processes, and can be far apart: under steady traffic most of a lingering
 * sender's polls found nothing, and a read per event cost the process and the database more than
 * the write it delivers.
 *
 * A sender arms a ticket before each read of its queue: every commit signalled after that (even
 * while the read runs) lands on the ticket until the sender is done with it, so the wait after an
 * empty read ends at once and no commit is missed between a read and its wait. A sender that takes
 * a ticket's events arms the next ticket first, in the same turn of the event loop.
 */
import type { WebhookEvent } from '../types.ts';

/** How long after this process's last signalled commit it counts as a writer of directories. */
const WRITER_FOR_MS = 60_000;
/** Events kept on one ticket; beyond them the sender reads its queue instead. */
const TICKET_EVENTS = 200;

export interface WakeTicket {
  /** Waits until a commit of the directory is signalled, `ms` pass, or `signal` aborts. */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  /** Stops listening (after a read that found events, or after the wait). */
  done(): void;
  /** Whether a commit of the directory was signalled since the ticket was armed. */
  fired(): boolean;
  /**
   * The events of the commits signalled since the ticket was armed, in the order signalled;
   * undefined when more came than a ticket keeps (or none were handed over with a commit).
   */
  events(): readonly WebhookEvent[] | undefined;
}

interface Armed {
  fire(events: readonly WebhookEvent[] | undefined): void;
}

export class Wakeups {
  private readonly armed = new Map<string, Set<Armed>>();
  private lastCommit = Number.NEGATIVE_INFINITY;

  /**
   * A change of `directoryId` has committed (called after the commit, never before), with the
   * events queued for real-time delivery (omitted: unknown; the senders read their queue).
   */
  committed(directoryId: string, events?: readonly WebhookEvent[]): void {
    this.lastCommit = performance.now();
    const tickets = this.armed.get(directoryId);
    if (tickets) for (const t of tickets) t.fire(events);
  }

  /**
   * Whether this process applied changes with events lately: its senders are then woken by those
   * commits, and poll only for other processes' writes. A worker of its own (`gatehouse worker`)
   * never is.
   */
  writer(): boolean {
    return performance.now() - this.lastCommit < WRITER_FOR_MS;
  }

  /** Listens for the directory's commits, from now on until `done()`. */
  arm(directoryId: string): WakeTicket {
    let fired = false;
    let kept: WebhookEvent[] | undefined = [];
    let wake: (() => void) | undefined;
    const armed: Armed = {
      fire(events) {
        fired = true;
        if (kept && events && kept.length + events.length <= TICKET_EVENTS) kept.push(...events);
        else kept = undefined;
        wake?.();
      },
    };
    let set = this.armed.get(directoryId);
    if (!set) {
      set = new Set();
      this.armed.set(directoryId, set);
    }
    set.add(armed);
    const done = () => {
      const s = this.armed.get(directoryId);
      if (!s?.delete(armed) || s.size) return;
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
    return { wait, done, fired: () => fired, events: () => kept };
  }
}
