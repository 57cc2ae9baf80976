/**
 * OpenID Connect request parameters: `state` entropy, `nonce`, `prompt` and `max_age`.
 * `prompt=select_account` is accepted and handled like `login`: gatehouse keeps one
 * account per login session, so choosing an account means logging in again.
 */
import { oauth2Error } from '../../oauth-errors.ts';
import { splitSpaces } from '../../scope.ts';

export const MIN_ENTROPY = 8;
const PROMPTS = new Set(['login', 'none', 'consent', 'select_account', 'registration']);

export function checkState(state: string): void {
  if (state.length < MIN_ENTROPY) {
    throw oauth2Error('invalid_state', {
      hint: `Request parameter 'state' must be at least be ${MIN_ENTROPY} characters long to ensure sufficient entropy.`,
    });
  }
}

export function checkNonce(nonce: string, responseTypes: readonly string[]): void {
  if (!nonce && responseTypes.includes('id_token')) {
    throw oauth2Error('invalid_request', {
      hint: responseTypes.includes('code')
        ? "Parameter 'nonce' must be set when requesting an ID Token using the OpenID Connect Hybrid Flow."
        : "Parameter 'nonce' must be set when using the OpenID Connect Implicit Flow.",
    });
  }
  if (nonce && nonce.length < MIN_ENTROPY) {
    throw oauth2Error('insufficient_entropy', {
      hint: `Parameter 'nonce' is set but does not satisfy the minimum entropy of ${MIN_ENTROPY} characters.`,
    });
  }
}

export function parsePrompt(raw: string | undefined): string[] {
  const prompt = splitSpaces(raw);
  if (prompt.some((p) => !PROMPTS.has(p))) {
    throw oauth2Error('invalid_request', { hint: `Used unknown value '[${prompt.join(' ')}]' for prompt parameter` });
  }
  if (prompt.includes('none') && prompt.length > 1) {
    throw oauth2Error('invalid_request', {
      hint: "Parameter 'prompt' was set to 'none', but contains other values as well which is not allowed.",
    });
  }
  return prompt;
}

/** Whether the request forces the login screen (`login`, and `select_account` handled like it). */
export const forcesLogin = (prompt: readonly string[]) => prompt.includes('login') || prompt.includes('select_account');

export function parseMaxAge(raw: string | undefined): number {
  if (raw === undefined || raw === '') return -1;
  if (!/^\d{1,10}$/.test(raw)) {
    throw oauth2Error('invalid_request', { hint: "Parameter 'max_age' must be a non-negative integer." });
  }
  return Number(raw);
}
