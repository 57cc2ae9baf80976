/** Helpers for the configuration tests. */
import { ConfigError } from '../../src/core/config/load.ts';

/** The problems a `ConfigError` thrown by `f` lists; fails when `f` throws something else or nothing. */
export const problems = (f: () => unknown): string[] => {
  try {
    f();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
};
