/**
 * OpenAPI 3.1 documents built from route tables. Request and response bodies come from the zod
 * schemas the handlers decode with, converted by zod's own JSON Schema generator
 * (`z.toJSONSchema`, JSON Schema 2020-12, the dialect of OpenAPI 3.1; input shapes for requests).
 * Routes declared without a document (directory sync, health) are documented from their
 * declaration: method, path and operation id (the handler's function name).
 */
import { z } from 'zod';
import type { DeclaredRoute } from './routes.ts';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteDoc {
  method: HttpMethod;
  /** koa-router syntax (`/admin/clients/:id`). */
  path: string;
  operationId: string;
  tags: string[];
  summary: string;
  deprecated?: boolean;
  /** `basic` (client_secret_basic), `bearer` (an access token), `none` (public clients). */
  security?: Array<'basic' | 'bearer' | 'none'>;
  query?: Array<{ name: string; description: string; required?: boolean }>;
  body?: { type: 'json' | 'form'; schema: z.ZodType };
  responses: Record<string | number, { description: string; schema?: z.ZodType; contentType?: string }>;
}

/** `/admin/keys/:set/:kid` → `/admin/keys/{set}/{kid}`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  delete out.$schema;
  return out;
}

function operation(r: RouteDoc): Record<string, unknown> {
  const params = [...r.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  for (const p of r.query ?? []) {
    params.push({ name: p.name, in: 'query', required: p.required ?? false, schema: { type: 'string' } });
  }
  const op: Record<string, unknown> = {
    operationId: r.operationId,
    tags: r.tags,
    summary: r.summary,
    ...(r.deprecated ? { deprecated: true } : {}),
    ...(params.length ? { parameters: params } : {}),
  };
  if (r.security?.length) {
    op.security = r.security.map((s) => (s === 'none' ? {} : { [s]: [] }));
  }
  if (r.body) {
    const type = r.body.type === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';
    op.requestBody = { required: true, content: { [type]: { schema: jsonSchema(r.body.schema, 'input') } } };
  }
  op.responses = Object.fromEntries(
    Object.entries(r.responses).map(([status, res]) => [
      String(status),
      {
        description: res.description,
        ...(res.schema || res.contentType
          ? {
              content: {
                [res.contentType ?? 'application/json']: res.schema ? { schema: jsonSchema(res.schema, 'output') } : {},
              },
            }
          : {}),
      },
    ]),
  );
  return op;
}

/** `/api/v1/dsync/:id` → `ApiV1DsyncId`. */
const camel = (path: string) =>
  path.replace(/(?:^|[^A-Za-z0-9]+)(.)?/g, (_s: string, c: string | undefined) => (c ? c.toUpperCase() : ''));

const METHODS: readonly HttpMethod[] = ['get', 'post', 'put', 'patch', 'delete'];

/** Routes declared without a document (directory sync, health): method, path, tag and the handler's name. */
export function declaredDocs(routes: readonly DeclaredRoute[]): RouteDoc[] {
  const out: RouteDoc[] = [];
  for (const r of routes) {
    const methods = r.method === 'all' ? METHODS : [r.method];
    for (const m of methods) {
      out.push({
        method: m,
        path: r.path,
        operationId: r.name ?? `${m}${camel(r.path)}`,
        tags: [r.tag],
        summary: '',
        responses: {},
      });
    }
  }
  return out;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
  serverUrl: string;
}

/** The document; duplicate operation ids get a method suffix so that they stay unique. */
export function openApiDocument(info: OpenApiInfo, routes: readonly RouteDoc[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const ids = new Set<string>();
  for (const r of routes) {
    const p = openApiPath(r.path);
    paths[p] ??= {};
    if (paths[p][r.method]) continue;
    const op = operation(r);
    let id = r.operationId;
    if (ids.has(id)) id = `${id}_${r.method}`;
    if (ids.has(id)) id = `${r.operationId}_${r.method}${camel(r.path)}`;
    ids.add(id);
    op.operationId = id;
    if (!Object.keys(op.responses as object).length) op.responses = { default: { description: 'See the manual.' } };
    paths[p][r.method] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    servers: [{ url: info.serverUrl }],
    paths,
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic' },
        bearer: { type: 'http', scheme: 'bearer' },
      },
    },
  };
}
