#!/usr/bin/env node
// The installed `gatehouse` command. An installed package runs the JavaScript built into dist/ by
// `npm pack` (Node.js does not strip types under node_modules); a source checkout runs src/ directly,
// so development never needs a build.
import { existsSync } from 'node:fs';

// The long-running commands cap V8's young generation. V8 sizes it by the machine's memory (on a
// 24 GiB machine its two semi-spaces grow to 64 MB each under load), which alone would put a busy
// `serve all` above 250 MB of RSS; with 16 MB semi-spaces it stays under 200 MB (see
// docs/performance.md, Memory). Node reads the flag only at start, so the process replaces itself
// (process.execve: same pid, same signals) with the flag added. A --max-semi-space-size or
// --max-heap-size given in NODE_OPTIONS or on the node command line wins; without execve
// (Windows, Node < 22.15) nothing changes.
const SEMI_SPACE_MB = 16;
const args = process.argv.slice(2);
const longRunning = args.includes('serve') || args.includes('worker');
const sized = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((a) =>
  /^--max-(semi-space|heap)-size/.test(a),
);
if (longRunning && !sized && typeof process.execve === 'function') {
  process.execve(
    process.execPath,
    [process.execPath, `--max-semi-space-size=${SEMI_SPACE_MB}`, ...process.execArgv, process.argv[1], ...args],
    process.env,
  );
}

const here = import.meta.dirname;
const fromSource = existsSync(`${here}/../src/cli/index.ts`) && !/[\\/]node_modules[\\/]/.test(here);
const { main } = await import(fromSource ? '../src/cli/index.ts' : '../dist/src/cli/index.js');
await main();
