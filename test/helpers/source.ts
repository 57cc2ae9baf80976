/**
 * Reading TypeScript source without a compiler, for the architecture rules (test/unit/architecture.test.ts):
 * `blank` wipes comments (and, on request, the contents of strings, templates and regular
 * expressions) keeping every offset and line, so that what is left can be searched and its brackets
 * matched; `functionsOf` finds the functions with a block body and how many lines each spans.
 */

/**
 * `text` with comments replaced by spaces (newlines stay), and the insides of literals too: all of
 * them with `strings: true`, those with white space in them (prose: messages, descriptions) with
 * `strings: 'prose'`.
 */
export function blank(text: string, o: { strings: boolean | 'prose' }): string {
  const out = text.split('');
  const wipe = (a: number, b: number) => {
    for (let k = a; k < b; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  const literal = (a: number, b: number) => {
    if (o.strings === true || (o.strings === 'prose' && /\s/.test(text.slice(a, b)))) wipe(a, b);
  };
  /** Brace depths at which the template expressions being read close (`${ … }`). */
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  /** The last character of code that is not white space (a `/` after it starts a regular expression or divides). */
  let prev = '';
  const regexAllowed = () =>
    prev === '' ||
    '(,=:[!&|?{};+-*%<>~^'.includes(prev) ||
    /\b(return|typeof|case|in|of|void|yield|await|delete|throw|new)$/.test(
      text.slice(Math.max(0, i - 10), i).trimEnd(),
    );
  /** Reads template text from `start`; answers where code resumes (after the closing backtick, or inside `${`). */
  const template = (start: number): number => {
    let j = start;
    while (j < text.length) {
      const c = text[j];
      if (c === '\\') j += 2;
      else if (c === '`') {
        literal(start, j);
        return j + 1;
      } else if (c === '$' && text[j + 1] === '{') {
        literal(start, j);
        templates.push(depth);
        depth++;
        return j + 2;
      } else j++;
    }
    return text.length;
  };
  while (i < text.length) {
    const c = text[i] as string;
    const n = text[i + 1];
    if (c === '/' && (n === '/' || n === '*')) {
      const e = n === '/' ? text.indexOf('\n', i) : text.indexOf('*/', i + 2);
      const end = e < 0 ? text.length : n === '/' ? e : e + 2;
      wipe(i, end);
      i = end;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      literal(i + 1, j);
      i = j + 1;
      prev = c;
    } else if (c === '`') {
      i = template(i + 1);
      prev = '`';
    } else if (c === '/' && regexAllowed()) {
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n') {
        const d = text[j];
        if (d === '\\') j++;
        else if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        j++;
      }
      literal(i + 1, j);
      i = j + 1;
      prev = '/';
    } else if (c === '}' && templates.at(-1) === depth - 1) {
      depth--;
      templates.pop();
      i = template(i + 1);
      prev = '`';
    } else {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      if (!/\s/.test(c)) prev = c;
      i++;
    }
  }
  return out.join('');
}

/** Index of the bracket that closes the one at `open` (in blanked code), or -1. */
function closing(code: string, open: number): number {
  const pairs: Record<string, string> = { '(': ')', '{': '}', '[': ']' };
  const want: string[] = [];
  for (let i = open; i < code.length; i++) {
    const c = code[i] as string;
    if (pairs[c]) want.push(pairs[c] as string);
    else if (c === want.at(-1)) {
      want.pop();
      if (!want.length) return i;
    }
  }
  return -1;
}

/** The `{` of a block body after a parameter list that closes at `close` (a return type skipped), or -1. */
function bodyAfter(code: string, close: number): number {
  let i = close + 1;
  while (/\s/.test(code[i] ?? '')) i++;
  if (code.startsWith('=>', i)) {
    for (i += 2; /\s/.test(code[i] ?? ''); i++);
    return code[i] === '{' ? i : -1;
  }
  if (code[i] === '{') return i;
  if (code[i] !== ':') return -1;
  // A `{` right after `:`, `|`, `&`, `<` or `=>`, or inside brackets, opens a type; any other opens the body.
  let nesting = 0;
  let last = ':';
  for (i++; i < code.length; i++) {
    const c = code[i] as string;
    if (/\s/.test(c)) continue;
    if (c === '<' || c === '(' || c === '[') nesting++;
    else if ((c === '>' && code[i - 1] !== '=') || c === ')' || c === ']') nesting--;
    else if (c === '{') {
      if (nesting === 0 && !':|&<'.includes(last) && code.slice(i - 2, i) !== '=>') return i;
      i = closing(code, i);
      if (i < 0) return -1;
      last = '}';
      continue;
    } else if (c === ';' || (c === '=' && code[i + 1] !== '>')) return -1;
    last = c;
  }
  return -1;
}

const NOT_METHODS = new Set([
  'if',
  'for',
  'while',
  'switch',
  'catch',
  'with',
  'function',
  'return',
  'typeof',
  'await',
  'async',
  'new',
  'super',
  'import',
]);

export interface FunctionSpan {
  name: string;
  /** The line of its head (1-based): `function`, the method's name, or an arrow's parameters. */
  line: number;
  /** Lines from the head to the closing brace of its body. */
  lines: number;
}

/** The functions of `text` with a block body: declarations and expressions, methods, arrows. */
export function functionsOf(text: string): FunctionSpan[] {
  const code = blank(text, { strings: true });
  const starts = [0];
  for (let k = code.indexOf('\n'); k >= 0; k = code.indexOf('\n', k + 1)) starts.push(k + 1);
  const lineAt = (offset: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] as number) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const out: FunctionSpan[] = [];
  const bodies = new Set<number>();
  const add = (name: string, head: number, body: number) => {
    if (body < 0 || bodies.has(body)) return;
    const end = closing(code, body);
    if (end < 0) return;
    bodies.add(body);
    out.push({ name, line: lineAt(head), lines: lineAt(end) - lineAt(head) + 1 });
  };
  for (const m of code.matchAll(/\bfunction\b\s*\*?\s*([\w$]*)\s*(<[^>(]*>)?\s*\(/g)) {
    add(m[1] || '(anonymous)', m.index, bodyAfter(code, closing(code, m.index + m[0].length - 1)));
  }
  const method =
    /(?<![\w$.])(?:(?:async|get|set|static|private|public|protected|override)\s+)*([A-Za-z_$][\w$]*)\s*(<[^>(]*>)?\s*\(/g;
  for (const m of code.matchAll(method)) {
    if (NOT_METHODS.has(m[1] as string)) continue;
    const close = closing(code, m.index + m[0].length - 1);
    let k = close + 1;
    while (/\s/.test(code[k] ?? '')) k++;
    if (!code.startsWith('=>', k)) add(m[1] as string, m.index, bodyAfter(code, close));
  }
  for (const m of code.matchAll(/=>\s*\{/g)) {
    // The head: the parameter list's `(`, or the arrow itself (a single parameter, a return type).
    let k = m.index - 1;
    while (/\s/.test(code[k] ?? '')) k--;
    let head = m.index;
    if (code[k] === ')') {
      for (let d = 0; k >= 0; k--) {
        if (code[k] === ')') d++;
        else if (code[k] === '(' && --d === 0) break;
      }
      head = k;
    }
    add('(arrow)', head, m.index + m[0].length - 1);
  }
  return out;
}
