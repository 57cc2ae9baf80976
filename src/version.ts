import pkg from '../package.json' with { type: 'json' };

/** Releases are numbered `<yy>.<minor>.<patch>`; `/version` answers with a `v` prefix like Hydra. */
export const VERSION: string = pkg.version;
