/**
 * The job-slot accounting of src/core/jobs/slots.ts, driven by the events graphile-worker emits:
 * free slots per task (a lane runs only its tasks), and `nudge`, which wakes an idle worker of a
 * runner that runs the task, at most once per 50 ms per runner (each wake is a job fetch).
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { jobSlots, trackJobSlots } from '../../../src/core/jobs/slots.ts';

const untracks: Array<() => void> = [];
afterEach(() => {
  for (const u of untracks.splice(0)) u();
});

/** A runner of `tasks` with `concurrency` slots; `wakes` counts the wake-ups its pool got. */
function runner(concurrency: number, tasks: string[]) {
  const events = new EventEmitter();
  untracks.push(trackJobSlots(events, concurrency, tasks));
  const wakes: number[] = [];
  events.emit('pool:create', { workerPool: { nudge: (n: number) => wakes.push(n) } });
  return { events, wakes };
}

describe('job slots', () => {
  it('counts free slots per task: a lane’s slots only for its own tasks', () => {
    const main = runner(2, ['a', 'b']);
    runner(3, ['sender']);
    expect(jobSlots.free()).toBe(5);
    expect(jobSlots.free('sender')).toBe(3);
    expect(jobSlots.free('a')).toBe(2);
    main.events.emit('job:start');
    main.events.emit('job:start');
    expect(jobSlots.free('a')).toBe(0);
    expect(jobSlots.free('sender')).toBe(3);
    main.events.emit('job:complete');
    expect(jobSlots.free('b')).toBe(1);
    main.events.emit('pool:gracefulShutdown');
    expect(jobSlots.free('a')).toBe(0); // a runner shutting down takes no job
  });

  it('nudges only a runner of the task, and at most once per 50 ms', async () => {
    const main = runner(2, ['a']);
    const lane = runner(2, ['sender']);
    jobSlots.nudge('sender');
    jobSlots.nudge('sender');
    jobSlots.nudge('sender');
    expect(lane.wakes).toEqual([1]);
    expect(main.wakes).toEqual([]);
    await new Promise((r) => setTimeout(r, 60));
    jobSlots.nudge('sender');
    expect(lane.wakes).toEqual([1, 1]);
    // A runner with no idle slot is not woken.
    lane.events.emit('job:start');
    lane.events.emit('job:start');
    await new Promise((r) => setTimeout(r, 60));
    jobSlots.nudge('sender');
    expect(lane.wakes).toEqual([1, 1]);
  });
});
