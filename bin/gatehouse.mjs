#!/usr/bin/env node
// The installed `gatehouse` command: runs the CLI (importing alone runs nothing, as import.meta.main is false here).
const { main } = await import('../src/cli/index.ts');
await main();
