/**
 * Directory sync's part of the configuration (`dsync.*`, with Jackson's environment variable names
 * as aliases, and the SCIM body limit `serve.limits.body.scim`, merged into the core's `serve`) and
 * its defaults derived from the public listener's address. The face exports the part; the
 * composition root registers it (src/config.ts).
 */
import { bool, type ConfigPart, dur, int, list, oneOf, secs, str, url } from '../core/config/schema.ts';

const dsyncSpec = {
  serve: {
    limits: { body: { scim: int(1048576, 'Largest SCIM request body in bytes (identity providers).', 1024) } },
  },
  dsync: {
    external_url: url('Base URL that identity providers reach (`scim.endpoint` prefix).', '= urls.self.public'),
    api_keys: list([], 'API keys accepted by `/api/v1/dsync` (`Authorization: Api-Key <key>`).', {
      secret: true,
      aliases: ['JACKSON_API_KEYS'],
    }),
    api: {
      listener: oneOf(
        ['admin', 'public', 'both'],
        'admin',
        'Where `/api/v1/dsync` is served: the admin listener, the public one (one base URL for SCIM, the Google callback and the API, as Jackson) or both. `Authorization: Api-Key` (or, with `serve.admin.auth.enabled`, an admin credential of the family `dsync`) is required on each.',
      ),
    },
    webhook_batch_size: int(
      0,
      'Batch mode: queue events and deliver up to this many per directory per batch (0: real-time delivery).',
    ),
    webhook_batch_cron_interval: secs(
      '0',
      'Batch mode: process the queue on this interval (seconds or a duration; 0: only on `POST /api/v1/dsync/cron/process-events`).',
    ),
    webhook: {
      max_attempts: int(10, 'Delivery attempts per webhook job before it is left in the failed state.', 1),
      concurrency: int(
        16,
        'Real-time webhook senders (one per directory while it has events on their way) run at once per worker process, in job slots of their own beside `worker.concurrency`; a sender takes a pooled connection only per statement. Give the fleet at least as many as directories with steady traffic. 0: senders run in the `worker.concurrency` slots.',
        0,
      ),
      timeout: dur('20s', 'Timeout of one webhook request.'),
      linger: dur(
        '250ms',
        'How long a directory’s real-time sender that found nothing left to send waits for new events before it steps down (0: steps down at once); it waits only while another job slot of its worker is idle.',
      ),
    },
    webhook_logs_ttl: dur('168h', 'How long webhook logs are kept.'),
    debug_webhooks: bool(
      false,
      'Log every webhook body and the receiver’s answer at info, redacted (only the event’s identifiers stay readable; e-mail addresses and tokens in answers are masked).',
    ),
    page_limit: int(
      50,
      'The default and largest page of every directory-sync list (Jackson’s `db.pageLimit`).',
      1,
      10000,
    ),
    events: {
      retention: dur(
        '720h',
        'How long directory-sync events (and their delivered outbox rows) are kept; purged in bounded batches by the crontab task `dsync_events_purge`.',
      ),
    },
    webhook_url: url(
      'Global webhook for directory lifecycle events (`dsync.created`, `dsync.deleted`, `dsync.activated`, `dsync.deactivated`); off when empty.',
      '""',
      { aliases: ['WEBHOOK_URL'] },
    ),
    webhook_secret: str('', 'Signing secret of `dsync.webhook_url` (both must be set).', {
      secret: true,
      aliases: ['WEBHOOK_SECRET'],
    }),
    disallow_private_ip_ranges: bool(
      false,
      'Refuse webhook and cloud-directory (Google) requests to internal addresses (see Security).',
    ),
    google: {
      client_id: str('', 'Google OAuth client id.', { aliases: ['GOOGLE_CLIENT_ID'] }),
      client_secret: str('', 'Google OAuth client secret.', { secret: true, aliases: ['GOOGLE_CLIENT_SECRET'] }),
      authorize_path: str(
        '/api/scim/oauth/authorize',
        'Path (on `dsync.external_url`) that starts the Google authorization.',
      ),
      callback_path: str('/api/scim/oauth/callback', 'Path (on `dsync.external_url`) of the OAuth callback.'),
      authorization_link_ttl: dur(
        '15m',
        'How long an authorization link minted with `POST /api/v1/dsync/{id}/google/authorization-link` starts the Google authorization (see Directory sync).',
      ),
      auth_url: url(
        'Google authorization endpoint (point it elsewhere for a test double or an air-gapped proxy).',
        'https://accounts.google.com/o/oauth2/v2/auth',
      ),
      token_url: url('Google token endpoint.', 'https://oauth2.googleapis.com/token'),
      api_url: url('Base URL of the Google Admin SDK (Directory API).', 'https://admin.googleapis.com'),
      sync_interval: secs(
        '2h',
        'How often each Google directory is synced: the crontab sweep (every 10 minutes) enqueues the directories whose last run started longer ago (seconds or a duration; 0: only on demand).',
        { aliases: ['DSYNC_GOOGLE_CRON_INTERVAL'] },
      ),
    },
  },
};

export const DSYNC_CONFIG: ConfigPart<typeof dsyncSpec> = {
  spec: dsyncSpec,
  derive(m) {
    const c = { ...m };
    const g = c.dsync.google;
    m.dsync = {
      ...c.dsync,
      external_url: (c.dsync.external_url || c.urls.self.public).replace(/\/$/, ''),
      google: {
        ...g,
        auth_url: g.auth_url || 'https://accounts.google.com/o/oauth2/v2/auth',
        token_url: g.token_url || 'https://oauth2.googleapis.com/token',
        api_url: (g.api_url || 'https://admin.googleapis.com').replace(/\/$/, ''),
      },
    };
  },
};
