/**
 * RFC 6902 JSON Patch on a client document, with Hydra's restrictions (ory/x jsonx.ApplyJSONPatch):
 * only `add`, `remove` and `replace`; `replace` of a path that does not exist acts as `add` (except
 * for array elements); `add` creates missing parent objects; the id cannot be patched.
 *
 * Hydra answers a refused or failing patch with a generic 500. We answer 400 with the reason
 * instead: it is the caller's input that is wrong, and bad input must never give a 500.
 */
import jsonpatch from 'fast-json-patch';
import { AppError, HERODOT } from '../../core/errors.ts';

const ALLOWED = new Set(['add', 'remove', 'replace']);
/** Hydra denies `/id`; the document's id member is `client_id`, so both are refused. */
const DENIED = new Set(['/client_id', '/id']);

const badPatch = (reason: string) =>
  new AppError({ status: 400, code: HERODOT.badRequest, description: `Unable to apply the JSON Patch: ${reason}` });

interface Op {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

function isElementAccess(path: string): boolean {
  const last = path.split('/').pop() ?? '';
  return last === '-' || /^\d+$/.test(last);
}

/** Bound on the operations of one patch (a client document has a few dozen members). */
export const MAX_PATCH_OPERATIONS = 100;

function checkOps(body: unknown): Op[] {
  if (!Array.isArray(body)) throw badPatch('the body must be a JSON array of operations');
  if (body.length > MAX_PATCH_OPERATIONS) throw badPatch(`more than ${MAX_PATCH_OPERATIONS} operations`);
  return body.map((raw, i) => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      throw badPatch(`operation ${i} is not an object`);
    const o = raw as Record<string, unknown>;
    if (typeof o.op !== 'string') throw badPatch(`operation ${i} has no op`);
    if (!ALLOWED.has(o.op)) throw badPatch(`unsupported operation: ${o.op}`);
    if (typeof o.path !== 'string') throw badPatch(`operation ${i} has no path`);
    if (o.path !== '' && !o.path.startsWith('/')) throw badPatch(`invalid path ${JSON.stringify(o.path)}`);
    if (DENIED.has(o.path.toLowerCase())) throw badPatch(`patch includes denied path: ${o.path}`);
    if (o.op !== 'remove' && !('value' in o)) throw badPatch(`operation ${i} (${o.op}) has no value`);
    const op = o.op === 'replace' && !isElementAccess(o.path) ? 'add' : o.op;
    return { op, path: o.path, ...('value' in o ? { value: o.value } : {}) };
  });
}

/** `EnsurePathExistsOnAdd`: an add below missing object members creates them. */
function ensureParents(doc: unknown, path: string): void {
  const parts = path.split('/').slice(1, -1).map(jsonpatch.unescapePathComponent);
  let cur = doc as Record<string, unknown>;
  for (const p of parts) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return;
    if (cur[p] === undefined || cur[p] === null) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
}

/** Applies the patch to a copy of `doc`; a refused or failing operation is a 400. */
export function applyClientPatch(doc: Record<string, unknown>, body: unknown): Record<string, unknown> {
  const ops = checkOps(body);
  let current: unknown = structuredClone(doc);
  for (const op of ops) {
    if (op.path === '') throw badPatch('the whole document cannot be replaced');
    if (op.op === 'add') ensureParents(current, op.path);
    try {
      current = jsonpatch.applyOperation(current, op as jsonpatch.Operation, true, true).newDocument;
    } catch (e) {
      const name = (e as { name?: string }).name ?? 'error';
      throw badPatch(`${name.toLowerCase().replaceAll('_', ' ')} at ${op.path}`);
    }
  }
  if (current === null || typeof current !== 'object' || Array.isArray(current)) {
    throw badPatch('the patched document is not an object');
  }
  return current as Record<string, unknown>;
}
