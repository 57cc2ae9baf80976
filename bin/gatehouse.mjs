#!/usr/bin/env node
// Runs the TypeScript CLI directly: Node >= 22.18 strips types without a build step.
await import('../src/cli/index.ts');
