/** Helpers for the OAuth 2.0 client tests: the official Hydra SDK and raw JSON calls. */
import { Configuration, OAuth2Api, OidcApi } from '@ory/hydra-client';
import type { JsonBody } from './json.ts';

export const adminApi = (adminUrl: string) => new OAuth2Api(new Configuration({ basePath: adminUrl }));
export const oidcApi = (publicUrl: string) => new OidcApi(new Configuration({ basePath: publicUrl }));

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: JsonBody;
}

/** A raw JSON request (exact wire checks). `body` is sent as JSON unless it is already a string. */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<JsonResponse> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
}

/** Parses `Link: <url>; rel="first",<url>; rel="next"` into rel → URL. */
export function parseLink(header: string | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of (header ?? '').matchAll(/<([^>]*)>;\s*rel="([^"]+)"/g)) out[m[2] as string] = m[1] as string;
  return out;
}
