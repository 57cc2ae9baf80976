/**
 * Import rules over the source tree (src/ and tasks/), read from the files themselves: every
 * `import … from '…'`, `export … from '…'`, side-effect `import '…'` and dynamic `import('…')`
 * with a relative specifier is an edge, type-only imports included.
 *
 * - the two domains never import each other: src/oauth2 ↛ src/dsync, src/dsync ↛ src/oauth2;
 * - the core knows no domain and nothing above it: src/core ↛ src/oauth2, src/dsync, src/cli,
 *   src/container.ts, src/server.ts, src/index.ts;
 * - a task imports only the core, the `Container` type (`import type`) and its own domain
 *   (`dsync_*` → src/dsync, `oauth2_*` → src/oauth2; other tasks have none).
 *
 * Every rule holds today without exceptions. The last test feeds each rule a made-up bad edge, so
 * a rule that no longer catches anything fails here too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

interface Edge {
  /** Importing file, relative to the repository root, `/`-separated. */
  from: string;
  /** Imported file, the same way. */
  to: string;
  typeOnly: boolean;
}

const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join('/'));
}

/** The relative imports of one file's text. */
function importsOf(file: string, text: string): Edge[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const edges: Edge[] = [];
  for (const m of code.matchAll(IMPORT_RE)) {
    const spec = m[2] ?? m[3];
    if (spec === undefined || !spec.startsWith('.')) continue;
    const to = relative(ROOT, resolve(ROOT, dirname(file), spec))
      .split(sep)
      .join('/');
    edges.push({ from: file, to, typeOnly: m[1] !== undefined });
  }
  return edges;
}

const under = (path: string, dir: string): boolean => path.startsWith(`${dir}/`);

type Rule = (e: Edge) => string | null;

const RULES: Record<string, Rule> = {
  'src/oauth2 does not import src/dsync': (e) =>
    under(e.from, 'src/oauth2') && under(e.to, 'src/dsync') ? 'oauth2 → dsync' : null,
  'src/dsync does not import src/oauth2': (e) =>
    under(e.from, 'src/dsync') && under(e.to, 'src/oauth2') ? 'dsync → oauth2' : null,
  'src/core imports no domain and nothing above it': (e) => {
    if (!under(e.from, 'src/core')) return null;
    const above = ['src/container.ts', 'src/server.ts', 'src/index.ts'];
    if (under(e.to, 'src/oauth2') || under(e.to, 'src/dsync') || under(e.to, 'src/cli') || above.includes(e.to)) {
      return 'core → above the core';
    }
    return null;
  },
  'tasks import only the core, the Container type and their own domain': (e) => {
    if (!under(e.from, 'tasks')) return null;
    if (under(e.to, 'src/core')) return null;
    if (e.to === 'src/container.ts') return e.typeOnly ? null : 'value import of the container';
    const name = e.from.slice('tasks/'.length);
    const own = name.startsWith('dsync_') ? 'src/dsync' : name.startsWith('oauth2_') ? 'src/oauth2' : null;
    if (own !== null && under(e.to, own)) return null;
    return 'outside the task’s own domain';
  },
};

const violations = (edges: Edge[], rule: Rule): string[] =>
  edges.flatMap((e) => {
    const why = rule(e);
    return why === null ? [] : [`${e.from} → ${e.to} (${why})`];
  });

const files = [...sourceFiles('src'), ...sourceFiles('tasks')];
const graph = files.flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), 'utf8')));

describe('import rules', () => {
  it('reads the import graph of src/ and tasks/', () => {
    expect(files.filter((f) => f.startsWith('tasks/')).length).toBeGreaterThan(5);
    // Spot checks that the parser sees each kind of edge.
    expect(graph).toContainEqual({ from: 'tasks/oauth2_janitor.ts', to: 'src/container.ts', typeOnly: true });
    expect(graph.some((e) => under(e.from, 'src/oauth2') && under(e.to, 'src/core'))).toBe(true);
    expect(graph.some((e) => under(e.from, 'src/dsync') && under(e.to, 'src/core'))).toBe(true);
  });

  for (const [name, rule] of Object.entries(RULES)) {
    it(name, () => {
      expect(violations(graph, rule)).toEqual([]);
    });
  }

  it('each rule catches a bad edge', () => {
    const bad: Record<string, string> = {
      'src/oauth2 does not import src/dsync': "import { x } from '../dsync/types.ts';",
      'src/dsync does not import src/oauth2': "const m = await import('../oauth2/ports.ts');",
      'src/core imports no domain and nothing above it': "import type { Container } from '../container.ts';",
      'tasks import only the core, the Container type and their own domain':
        "import { janitor } from '../src/oauth2/janitor/service.ts';",
    };
    const from: Record<string, string> = {
      'src/oauth2 does not import src/dsync': 'src/oauth2/x.ts',
      'src/dsync does not import src/oauth2': 'src/dsync/x.ts',
      'src/core imports no domain and nothing above it': 'src/core/x.ts',
      'tasks import only the core, the Container type and their own domain': 'tasks/dsync_x.ts',
    };
    for (const [name, rule] of Object.entries(RULES)) {
      const edges = importsOf(from[name] as string, bad[name] as string);
      expect(edges, name).toHaveLength(1);
      expect(violations(edges, rule), name).toHaveLength(1);
    }
    // A value import of the container from a task is refused; the type import is not.
    const task = RULES['tasks import only the core, the Container type and their own domain'] as Rule;
    expect(violations(importsOf('tasks/a.ts', "import { Container } from '../src/container.ts';"), task)).toHaveLength(
      1,
    );
    expect(violations(importsOf('tasks/a.ts', "import type { Container } from '../src/container.ts';"), task)).toEqual(
      [],
    );
  });
});
