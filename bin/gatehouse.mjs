#!/usr/bin/env node
// The installed `gatehouse` command. An installed package runs the JavaScript built into dist/ by
// `npm pack` (Node.js does not strip types under node_modules); a source checkout runs src/ directly,
// so development never needs a build.
import { existsSync } from 'node:fs';

const here = import.meta.dirname;
const fromSource = existsSync(`${here}/../src/cli/index.ts`) && !/[\\/]node_modules[\\/]/.test(here);
const { main } = await import(fromSource ? '../src/cli/index.ts' : '../dist/src/cli/index.js');
await main();
