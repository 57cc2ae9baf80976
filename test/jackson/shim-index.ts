/**
 * Stands in for Jackson's `npm/src/index.ts` when its own directory-sync tests run against gatehouse
 * (test/jackson/run.ts copies this file there): the default export is Jackson's factory, answered by
 * gatehouse's `controllers()`. Each test file gets a database of its own (GATEHOUSE_JACKSON_DB,
 * created by the runner) in place of Jackson's in-memory store, and the process's controllers close
 * when the test file's process exits (Jackson's tests end with process.exit).
 */
type Options = { externalUrl: string; db?: Record<string, unknown>; [key: string]: unknown };

export default async function jackson(opts: Options) {
  const src = process.env.GATEHOUSE_SRC;
  const url = process.env.GATEHOUSE_JACKSON_DB;
  if (!src || !url) throw new Error('GATEHOUSE_SRC and GATEHOUSE_JACKSON_DB are set by test/jackson/run.ts');
  const { controllers } = (await import(src)) as typeof import('../../src/index.ts');
  const c = await controllers({
    ...(opts as Parameters<typeof controllers>[0]),
    db: { ...opts.db, engine: 'sql', url },
  });
  return { directorySyncController: c.directorySyncController };
}
