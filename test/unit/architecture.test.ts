/**
 * Import rules over the source tree (src/ and tasks/), read from the files themselves: every
 * `import … from '…'`, `export … from '…'`, side-effect `import '…'` and dynamic `import('…')`
 * with a relative specifier is an edge, type-only imports included.
 *
 * - the two domains never import each other: src/oauth2 ↛ src/dsync, src/dsync ↛ src/oauth2;
 * - the console is a piece beside the domains: src/core, src/oauth2 and src/dsync never import
 *   src/console (only the composition root mounts it);
 * - the core knows no domain and nothing above it: src/core ↛ src/oauth2, src/dsync, src/cli,
 *   src/container.ts, src/server.ts, src/index.ts;
 * - a domain declares what it needs (src/oauth2/deps.ts, src/dsync/deps.ts) and knows nothing above
 *   it: src/oauth2, src/dsync ↛ src/container.ts (the composition root), src/server.ts,
 *   src/index.ts, src/cli;
 * - a task imports no composition root (src/container.ts, src/server.ts, src/index.ts, src/cli):
 *   its handler's context is a type its domain (or the core) declares, which the container the
 *   worker passes satisfies;
 * - a task imports only the core and its own domain (`dsync_*` → src/dsync, `oauth2_*` →
 *   src/oauth2, and `webhook_deliver`, directory sync's real-time sender named before that
 *   convention, → src/dsync; other tasks have none).
 *
 * One rule reads text rather than imports: the core's error and cookie code (errors, error rendering,
 * the apps, cookies, the failed-authentication limiter's 429) names no domain (`oauth2`, `dsync`, `scim`, `jackson`) outside comments; the
 * domains register their error renderers by path prefix instead.
 *
 * Another: every OAuth2 store scopes its rows by the one network id (`DEFAULT_NETWORK_ID`, imported),
 * never by a `nid` its callers pass.
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

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/** The relative imports of one file's text. */
function importsOf(file: string, text: string): Edge[] {
  const code = withoutComments(text);
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
  'src/core and the domains do not import src/console': (e) =>
    (under(e.from, 'src/core') || under(e.from, 'src/oauth2') || under(e.from, 'src/dsync')) &&
    under(e.to, 'src/console')
      ? 'core/domain → console'
      : null,
  'src/oauth2 does not import src/dsync': (e) =>
    under(e.from, 'src/oauth2') && under(e.to, 'src/dsync') ? 'oauth2 → dsync' : null,
  'src/dsync does not import src/oauth2': (e) =>
    under(e.from, 'src/dsync') && under(e.to, 'src/oauth2') ? 'dsync → oauth2' : null,
  'src/core imports no domain and nothing above it': (e) => {
    if (!under(e.from, 'src/core')) return null;
    const above = ['src/container.ts', 'src/server.ts', 'src/index.ts'];
    if (
      under(e.to, 'src/oauth2') ||
      under(e.to, 'src/dsync') ||
      under(e.to, 'src/cli') ||
      under(e.to, 'src/console') ||
      above.includes(e.to)
    ) {
      return 'core → above the core';
    }
    return null;
  },
  'a domain imports neither the composition root nor anything above it': (e) => {
    if (!under(e.from, 'src/oauth2') && !under(e.from, 'src/dsync')) return null;
    const above = ['src/container.ts', 'src/server.ts', 'src/index.ts'];
    return above.includes(e.to) || under(e.to, 'src/cli') ? 'domain → composition root or above' : null;
  },
  'tasks import no composition root': (e) => {
    if (!under(e.from, 'tasks')) return null;
    const above = ['src/container.ts', 'src/server.ts', 'src/index.ts'];
    return above.includes(e.to) || under(e.to, 'src/cli') ? 'task → composition root' : null;
  },
  'tasks import only the core and their own domain': (e) => {
    if (!under(e.from, 'tasks')) return null;
    if (under(e.to, 'src/core')) return null;
    const name = e.from.slice('tasks/'.length);
    const own =
      name.startsWith('dsync_') || name === 'webhook_deliver.ts'
        ? 'src/dsync'
        : name.startsWith('oauth2_')
          ? 'src/oauth2'
          : null;
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
    expect(graph).toContainEqual({ from: 'tasks/oauth2_janitor.ts', to: 'src/oauth2/tasks.ts', typeOnly: false });
    expect(graph.some((e) => under(e.from, 'tasks') && under(e.to, 'src/core'))).toBe(true);
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
      'src/core and the domains do not import src/console': "import { consoleRouter } from '../console/index.ts';",
      'src/oauth2 does not import src/dsync': "import { x } from '../dsync/types.ts';",
      'src/dsync does not import src/oauth2': "const m = await import('../oauth2/ports.ts');",
      'src/core imports no domain and nothing above it': "import type { Container } from '../container.ts';",
      'a domain imports neither the composition root nor anything above it':
        "import type { Core } from '../../container.ts';",
      'tasks import no composition root': "import type { Container } from '../src/container.ts';",
      'tasks import only the core and their own domain': "import { janitor } from '../src/oauth2/janitor/service.ts';",
    };
    const from: Record<string, string> = {
      'src/core and the domains do not import src/console': 'src/dsync/x.ts',
      'src/oauth2 does not import src/dsync': 'src/oauth2/x.ts',
      'src/dsync does not import src/oauth2': 'src/dsync/x.ts',
      'src/core imports no domain and nothing above it': 'src/core/x.ts',
      'a domain imports neither the composition root nor anything above it': 'src/dsync/scim/x.ts',
      'tasks import no composition root': 'tasks/oauth2_x.ts',
      'tasks import only the core and their own domain': 'tasks/dsync_x.ts',
    };
    for (const [name, rule] of Object.entries(RULES)) {
      const edges = importsOf(from[name] as string, bad[name] as string);
      expect(edges, name).toHaveLength(1);
      expect(violations(edges, rule), name).toHaveLength(1);
    }
    // Every composition root, type-only or not, is refused to a task.
    const root = RULES['tasks import no composition root'] as Rule;
    for (const spec of ['../src/container.ts', '../src/server.ts', '../src/index.ts', '../src/cli/worker.ts']) {
      expect(violations(importsOf('tasks/a.ts', `import { x } from '${spec}';`), root), spec).toHaveLength(1);
      expect(violations(importsOf('tasks/a.ts', `import type { x } from '${spec}';`), root), spec).toHaveLength(1);
    }
  });
});

/** The core's error and cookie code paths: what renders errors and sets cookies for every domain. */
const CORE_ERROR_AND_COOKIE_FILES = [
  'src/core/errors.ts',
  'src/core/http/errors.ts',
  'src/core/http/apps.ts',
  'src/core/http/cookies.ts',
  'src/core/http/auth-failures.ts',
];
// A media type such as `application/scim+json` (the body parser's JSON types) is not a domain name.
const DOMAIN_NAME = /\b(oauth2|dsync|scim|jackson)\b(?!\+json)/gi;
const domainNamesIn = (text: string): string[] => [...withoutComments(text).matchAll(DOMAIN_NAME)].map((m) => m[0]);

describe('the core knows no domain in its error and cookie code', () => {
  for (const file of CORE_ERROR_AND_COOKIE_FILES) {
    it(file, () => {
      expect(domainNamesIn(readFileSync(join(ROOT, file), 'utf8'))).toEqual([]);
    });
  }

  it('catches a domain name in code, not in a comment', () => {
    expect(domainNamesIn("if (family === 'scim') return 1;")).toEqual(['scim']);
    expect(domainNamesIn("ctx.body = { error: { code: e.code === 'jackson' } };")).toEqual(['jackson']);
    expect(domainNamesIn('/** RFC 7644 (SCIM) bodies come from the dsync domain. */\nconst x = 1;')).toEqual([]);
    expect(domainNamesIn("const types = ['application/json', 'application/scim+json'];")).toEqual([]);
  });
});

describe('the network id is handled one way in every store', () => {
  const takesNid = (text: string) => /\bnid\??\s*:\s*string\b/.test(withoutComments(text));
  const stores = sourceFiles('src/oauth2/store');

  it('reads the stores', () => {
    expect(stores.length).toBeGreaterThan(5);
  });

  for (const file of stores) {
    it(`${file} takes no network id from its callers`, () => {
      expect(takesNid(readFileSync(join(ROOT, file), 'utf8'))).toBe(false);
    });
  }

  it('catches a store function that takes one', () => {
    expect(takesNid('export async function listKeys(db: Executor, nid: string, sid: string) {}')).toBe(true);
    expect(takesNid("const row = { nid: DEFAULT_NID, id: 'x' };")).toBe(false);
  });
});
