/**
 * When the group commit (src/oauth2/store/group-commit.ts) sends its statements: a lone row at
 * once, rows arriving during a write together after it, a full batch without waiting (up to the
 * bound of writes under way), rows behind a write that does not finish after the wait bound, and
 * a failed batch row by row. The writes are held open by hand, so
 * every step is seen; the database side of the same writer is tested in
 * test/http/oauth2/introspection-cache.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GroupCommit } from '../../../src/oauth2/store/group-commit.ts';

/** A writer whose statements wait until released; it records the rows of each. */
function heldWriter(fail: (rows: number[]) => boolean = () => false) {
  const statements: number[][] = [];
  const open: Array<() => void> = [];
  const held = (rows: number[]) =>
    new Promise<number[]>((resolve, reject) => {
      statements.push(rows);
      open.push(() => (fail(rows) ? reject(new Error('batch failed')) : resolve(rows.map((r) => r * 10))));
    });
  const writer = new GroupCommit<number, number>({
    one: async (row) => ((await held([row])) as [number])[0],
    many: (rows) => held(rows),
  });
  /** Lets the statements sent so far finish, then the ones they started, until none is open. */
  const drain = async () => {
    while (open.length) {
      for (const release of open.splice(0)) release();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { writer, statements, drain };
}

describe('group commit', () => {
  it('sends a lone row at once and the rows that arrive meanwhile together after it', async () => {
    const { writer, statements, drain } = heldWriter();
    const first = writer.submit(1);
    expect(statements).toEqual([[1]]);
    const later = [2, 3, 4, 5].map((r) => writer.submit(r));
    expect(statements).toEqual([[1]]);
    await drain();
    expect(statements).toEqual([[1], [2, 3, 4, 5]]);
    expect(await Promise.all([first, ...later])).toEqual([10, 20, 30, 40, 50]);
  });

  it('sends a full batch without waiting, up to four statements under way', async () => {
    const { writer, statements, drain } = heldWriter();
    const all = Array.from({ length: 1 + 32 * 4 }, (_, i) => writer.submit(i));
    // The first row alone, then three full batches beside it; the fourth batch waits for a free slot.
    expect(statements.map((s) => s.length)).toEqual([1, 32, 32, 32]);
    await drain();
    expect(statements.map((s) => s.length)).toEqual([1, 32, 32, 32, 32]);
    expect((await Promise.all(all)).length).toBe(129);
  });

  describe('behind a write that does not finish', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('sends the rows waiting after 20 ms, beside it', async () => {
      vi.useFakeTimers();
      const { writer, statements, drain } = heldWriter();
      const all = [1, 2, 3].map((r) => writer.submit(r));
      expect(statements).toEqual([[1]]);
      vi.advanceTimersByTime(19);
      expect(statements).toEqual([[1]]);
      vi.advanceTimersByTime(1);
      expect(statements).toEqual([[1], [2, 3]]);
      vi.useRealTimers();
      await drain();
      expect(await Promise.all(all)).toEqual([10, 20, 30]);
    });
  });

  it('writes the rows of a failed batch one by one, each answered on its own', async () => {
    const { writer, statements, drain } = heldWriter((rows) => rows.includes(3));
    const first = writer.submit(1);
    const batch = Promise.allSettled([2, 3, 4].map((r) => writer.submit(r)));
    await drain();
    expect(statements).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
    expect(await first).toBe(10);
    expect((await batch).map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });
});
