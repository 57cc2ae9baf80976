/**
 * Subject identifiers (OpenID Connect Core §8): `public` passes the subject through; `pairwise` is
 * the lowercase hex of sha256(sector_id ‖ subject ‖ salt), where sector_id is the client's
 * `sector_identifier_uri` or the host of its single redirect URI (Hydra's algorithm).
 */
import { createHash } from 'node:crypto';
import { oauth2Error } from './oauth-errors.ts';
import type { FlowClient } from './ports.ts';

export interface SubjectConfig {
  supportedTypes: readonly string[];
  salt: string;
}

export function obfuscateSubject(cfg: SubjectConfig, client: FlowClient, subject: string, forced = ''): string {
  if (client.subjectType !== 'pairwise') return subject;
  if (!cfg.supportedTypes.includes('pairwise')) {
    throw oauth2Error('invalid_request', {
      hint: `Subject Identifier Algorithm 'pairwise' was requested by OAuth 2.0 Client '${client.id}' but is not configured.`,
    });
  }
  if (forced) return forced;
  let sector: string;
  if (client.sectorIdentifierUri) sector = client.sectorIdentifierUri;
  else if (client.redirectUris.length === 1) {
    try {
      sector = new URL(client.redirectUris[0] as string).host;
    } catch {
      sector = '';
    }
  } else if (client.redirectUris.length > 1) {
    throw oauth2Error('invalid_request', {
      hint: `OAuth 2.0 Client ${client.id} has multiple redirect_uris but no sector_identifier_uri was set which is not allowed when performing using subject type pairwise. Please reconfigure the OAuth 2.0 client properly.`,
    });
  } else {
    throw oauth2Error('invalid_request', {
      hint: `OAuth 2.0 Client ${client.id} neither specifies a sector_identifier_uri nor a redirect_uri which is not allowed when performing using subject type pairwise. Please reconfigure the OAuth 2.0 client properly.`,
    });
  }
  return createHash('sha256').update(sector).update(subject).update(cfg.salt).digest('hex');
}
