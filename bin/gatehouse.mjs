#!/usr/bin/env node
// The installed `gatehouse` command. An installed package runs the JavaScript built into dist/ by
// `npm pack` (Node.js does not strip types under node_modules); a source checkout runs src/ directly,
// so development never needs a build.
// package.json's engines: Node.js >= 22.18 (type stripping for a checkout, process.execve and the
// compile cache below). An older Node would fail later with a stack trace about a `.ts` file; say it
// in one line instead.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(`gatehouse: Node.js >= 22.18 is required (this is ${process.version})\n`);
  process.exit(1);
}

import { existsSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

// The long-running commands run with two V8 heap settings (see docs/performance.md, Memory), each
// unless NODE_OPTIONS or the node command line sets it already:
// - the young generation capped at 16 MB semi-spaces. V8 sizes it by the machine's memory (on a
//   24 GiB machine its two semi-spaces grow to 64 MB each under load), which alone would put a busy
//   `serve all` above 250 MB of RSS;
// - the old generation let grow by 20% of what survived the last full collection before the next
//   one, instead of V8's factor of up to 4 for a process that collects quickly. A busy `serve all`
//   keeps about 40 MB live, and with V8's factor its old space grew to 75–100 MB of mostly garbage
//   under SCIM writes, pages V8 keeps once it has them.
// Node reads these flags only at start, so the process replaces itself (process.execve: same pid,
// same signals) with them added; without execve (Windows, Node < 22.15) nothing changes.
const NODE_FLAGS = ['--max-semi-space-size=16', '--heap-growing-percent=20'];
const args = process.argv.slice(2);
const longRunning = args.includes('serve') || args.includes('worker');
const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].map((a) =>
  a.split('=')[0].replaceAll('_', '-'),
);
// --max-heap-size sets both generations' sizes: it stands for a chosen semi-space size too.
const chosen = (flag) =>
  given.includes(flag.split('=')[0]) || (flag.startsWith('--max-semi-space-size') && given.includes('--max-heap-size'));
const added = NODE_FLAGS.filter((f) => !chosen(f));
if (longRunning && added.length && typeof process.execve === 'function') {
  process.execve(
    process.execPath,
    [process.execPath, ...added, ...process.execArgv, process.argv[1], ...args],
    process.env,
  );
}

// V8's compile cache (Node.js >= 22.1): the code of the modules a command loads is kept on disk
// and reused by the next start, which halves the CPU a start spends loading gatehouse (1.25 s ->
// 0.6 s of CPU to import the library on a 2-core machine): quicker CLI commands, and quicker
// replacement of a serve or worker process. The cache lives in the user's own cache folder (not a
// folder of the shared temporary directory, which another local user could fill first);
// NODE_COMPILE_CACHE chooses another folder and NODE_DISABLE_COMPILE_CACHE=1 turns it off. A folder
// that cannot be written leaves the cache off, and nothing else changes.
if (typeof module.enableCompileCache === 'function' && !process.env.NODE_DISABLE_COMPILE_CACHE) {
  try {
    const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
    module.enableCompileCache(process.env.NODE_COMPILE_CACHE || join(cacheHome, 'gatehouse', 'node-compile-cache'));
  } catch {
    // no home folder: run without the cache
  }
}

const here = import.meta.dirname;
const fromSource = existsSync(`${here}/../src/cli/index.ts`) && !/[\\/]node_modules[\\/]/.test(here);
const { main } = await import(fromSource ? '../src/cli/index.ts' : '../dist/src/cli/index.js');
await main();
