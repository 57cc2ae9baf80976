/**
 * The admin-API client of the CLI: `-e/--endpoint` or `ORY_SDK_URL` (Hydra's flag and variable),
 * JSON in and out, and one-line errors for every failure.
 */
import { Option } from 'commander';

export const endpointOption = () =>
  new Option('-e, --endpoint <url>', 'admin API URL (e.g. http://127.0.0.1:4445)').env('ORY_SDK_URL');

/** The base URL without a trailing slash. @throws when it is missing or not an http(s) URL */
export function endpointOf(o: { endpoint?: string }): string {
  const e = o.endpoint?.trim();
  if (!e) throw new Error('set the admin API URL with --endpoint or ORY_SDK_URL');
  if (!URL.canParse(e) || !/^https?:$/.test(new URL(e).protocol)) {
    throw new Error(`the endpoint ${JSON.stringify(e)} is not an http(s) URL`);
  }
  return e.replace(/\/+$/, '');
}

/** `Authorization: Basic …` for client_secret_basic: id and secret form-encoded first (RFC 6749 §2.3.1). */
export function basicAuthorization(id: string, secret: string): string {
  const formEncode = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** `status error: description` from a Hydra error body, whatever its shape. */
function describeError(status: number, body: any): string {
  if (body && typeof body.error === 'string') {
    return `${status} ${body.error}${body.error_description ? `: ${body.error_description}` : ''}`;
  }
  if (body?.error && typeof body.error === 'object') return `${status} ${body.error.message ?? 'error'}`;
  return `${status} ${typeof body === 'string' && body ? body : 'the server answered with an error'}`;
}

/** Calls the admin API. @throws an Error with a one-line message on a network failure or a non-2xx answer */
export async function adminRequest(base: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
  let r: Response;
  try {
    r = await fetch(`${base}${path}`, {
      method,
      headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (e) {
    const c = (e as { cause?: { code?: string; message?: string } }).cause;
    const cause = c?.code ?? c?.message ?? (e as Error).message;
    throw new Error(`cannot reach ${base} (${cause})`);
  }
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text for the error message
  }
  if (r.status >= 400) throw new Error(describeError(r.status, parsed));
  return { status: r.status, headers: r.headers, body: parsed };
}
