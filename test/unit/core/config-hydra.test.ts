import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { listenerTls } from '../../../src/core/http/tls.ts';
import { problems } from '../../helpers/config.ts';
import { selfSigned } from '../../helpers/tls.ts';

const FIXTURE = resolve(import.meta.dirname, '../../fixtures/config/hydra-26.yml');
const SECRET = 'a-long-enough-system-secret';
const dir = mkdtempSync(join(tmpdir(), 'gh-hydra-cfg-'));

function load(yaml: string, env: Record<string, string> = {}) {
  const file = join(dir, `c-${Math.random().toString(36).slice(2)}.yml`);
  writeFileSync(file, yaml);
  const warnings: string[] = [];
  const config = loadConfig({ file, env, warn: (l) => warnings.push(l) });
  return { config, warnings, file };
}

let hydraYaml: string;
beforeAll(() => {
  const a = selfSigned('localhost');
  const b = selfSigned('admin.localhost');
  writeFileSync(join(dir, 'cert.pem'), a.cert);
  writeFileSync(join(dir, 'key.pem'), a.key);
  hydraYaml = readFileSync(FIXTURE, 'utf8')
    .replace('__DSN__', 'postgres://hydra@db:5432/hydra')
    .replace('__CERT__', join(dir, 'cert.pem'))
    .replace('__KEY__', join(dir, 'key.pem'))
    .replace('__CERT_B64__', Buffer.from(b.cert).toString('base64'))
    .replace('__KEY_B64__', Buffer.from(b.key).toString('base64'));
});

describe('a Hydra 26 config file', () => {
  it('starts, with one warning per Hydra key that gatehouse does not implement', () => {
    const { config, warnings, file } = load(hydraYaml);
    const suffix = ` (from ${file}) is a Hydra setting that gatehouse does not implement; ignored`;
    expect(warnings.map((w) => w.replace(suffix, '')).sort()).toEqual(
      [
        'version',
        'log.redaction_text',
        'serve.cookies.same_site_legacy_workaround',
        'serve.public.request_log',
        'serve.tls.allow_termination_from',
        'sqa.opt_out',
      ]
        .map((k) => (k === 'serve.public.request_log' ? 'serve.public.request_log.disable_for_health' : k))
        .sort(),
    );
    expect(warnings.every((w) => w.endsWith(suffix))).toBe(true);
    // What gatehouse implements is applied.
    expect(config.dsn).toBe('postgres://hydra@db:5432/hydra');
    expect(config.oauth2.hashers.algorithm).toBe('bcrypt');
    expect(config.oauth2.pkce.enforced_for_public_clients).toBe(true);
    expect(config.log.level).toBe('warn');
    expect(config.serve.public.cors.enabled).toBe(true);
    expect(config.serve.admin.cors.enabled).toBe(false);
    expect(config.tracing).toMatchObject({ provider: 'otel', service_name: 'hydra' });
    expect(config.tracing.providers.otlp).toMatchObject({ server_url: '127.0.0.1:4318', insecure: true });
    expect(listenerTls(config, 'public')).toEqual({
      cert: { key: 'serve.tls.cert.path', path: join(dir, 'cert.pem') },
      key: { key: 'serve.tls.key.path', path: join(dir, 'key.pem') },
    });
    expect(listenerTls(config, 'admin')?.cert.key).toBe('serve.admin.tls.cert.base64');
    expect(listenerTls(config, 'admin')?.key.key).toBe('serve.admin.tls.key.base64');
  });

  it('keeps unknown keys that are not Hydra’s an error, with a suggestion', () => {
    const file = join(dir, 'typo.yml');
    writeFileSync(
      file,
      'serve:\n  public:\n    prot: 1\n  admin:\n    cosr:\n      enabled: true\nissuer: https://x/\nfrobnicate: 1\n',
    );
    expect(problems(() => loadConfig({ file, env: {}, warn: () => {} }))).toEqual([
      'serve.public.prot: unknown key (did you mean serve.public.port?)',
      'serve.admin.cosr: unknown key (did you mean serve.admin.cors?)',
      'issuer: unknown key (did you mean urls.self.issuer?)',
      'frobnicate: unknown key',
    ]);
  });

  it('applies the same rules to environment variables', () => {
    const warnings: string[] = [];
    const c = loadConfig({
      env: {
        TRACING_PROVIDER: 'otel',
        TRACING_PROVIDERS_JAEGER_SAMPLING_SERVER_URL: 'http://jaeger:5778/sampling',
        SERVE_PUBLIC_CORS_ENABLED: 'true',
        SQA_OPT_OUT: 'true',
        // Not configuration: other tools' variables, container links, a generic VERSION.
        DB_PORT: 'tcp://10.0.0.5:5432',
        LOG_FILE: '/var/log/x',
        VERSION: '1.2.3',
        SERVE_TLS_CERT_PATH: join(dir, 'cert.pem'),
        SERVE_TLS_KEY_PATH: join(dir, 'key.pem'),
      },
      warn: (l) => warnings.push(l),
    });
    expect(warnings.sort()).toEqual(
      [
        'SQA_OPT_OUT (sqa) is a Hydra setting that gatehouse does not implement; ignored',
        'TRACING_PROVIDERS_JAEGER_SAMPLING_SERVER_URL (tracing.providers.jaeger) is a Hydra setting that gatehouse does not implement; ignored',
      ].sort(),
    );
    expect(c.serve.public.cors.enabled).toBe(true);
    expect(c.tracing.provider).toBe('otel');
    expect(listenerTls(c, 'admin')?.cert.path).toBe(join(dir, 'cert.pem'));
    expect(c.urls.self.issuer).toBe('https://localhost:4444/');
    expect(problems(() => loadConfig({ env: { SERVE_PUBLIC_PROT: '1', URLS_SELF_ISUER: 'https://x/' } }))).toEqual([
      'SERVE_PUBLIC_PROT: unknown environment variable (did you mean SERVE_PUBLIC_PORT?)',
      'URLS_SELF_ISUER: unknown environment variable (did you mean URLS_SELF_ISSUER?)',
    ]);
  });

  it('checks TLS settings: pairs, one source per part, enabled without material, per-listener off', () => {
    const cert = join(dir, 'cert.pem');
    expect(problems(() => loadConfig({ env: { SERVE_TLS_CERT_PATH: cert } }))).toEqual([
      'serve.public.tls: a certificate is set (serve.tls.cert.path) but no key',
      'serve.admin.tls: a certificate is set (serve.tls.cert.path) but no key',
    ]);
    expect(
      problems(() =>
        loadConfig({ env: { SERVE_ADMIN_TLS_KEY_PATH: cert, SERVE_ADMIN_TLS_KEY_BASE64: 'eA==', DSN: 'memory' } }),
      ),
    ).toEqual(['serve.admin.tls.key: set either path or base64, not both']);
    expect(problems(() => loadConfig({ env: { SERVE_PUBLIC_TLS_ENABLED: 'true' } }))).toEqual([
      'serve.public.tls: TLS is enabled but no certificate and key are set (cert.path or cert.base64, key.path or key.base64)',
    ]);
    const c = loadConfig({
      env: {
        SERVE_TLS_CERT_PATH: cert,
        SERVE_TLS_KEY_PATH: join(dir, 'key.pem'),
        SERVE_ADMIN_TLS_ENABLED: 'false',
        SECRETS_SYSTEM: SECRET,
      },
    });
    expect(listenerTls(c, 'public')).toBeDefined();
    expect(listenerTls(c, 'admin')).toBeUndefined();
    expect(c.urls.self.admin).toBe('http://localhost:4445/');
  });

  it('starts with Hydra’s jaeger or zipkin tracing provider, tracing off and a warning that says so', () => {
    for (const provider of ['jaeger', 'zipkin']) {
      const warnings: string[] = [];
      const c = loadConfig({ env: { TRACING_PROVIDER: provider }, warn: (l) => warnings.push(l) });
      expect(c.tracing.provider).toBe(provider);
      expect(warnings).toEqual([
        `tracing.provider: ${provider} is a Hydra tracing provider that gatehouse does not implement; tracing is off (use otel, which Jaeger and Zipkin collectors accept over OTLP)`,
      ]);
    }
    expect(problems(() => loadConfig({ env: { TRACING_PROVIDER: 'datadog' } }))[0]).toMatch(/^tracing\.provider: /);
  });
});

describe('Hydra keys of CORS, the device grant and verifiable credentials', () => {
  it('are applied; only cors.options_passthrough is ignored with a warning', () => {
    const { config, warnings } = load(`
serve:
  public:
    cors:
      enabled: true
      options_passthrough: true
  cookies:
    names:
      device_csrf: my_device_csrf
urls:
  device:
    verification: https://ui.example/device
    success: https://ui.example/device/done
ttl:
  device_user_code: 5m
  vc_nonce: 30m
oauth2:
  device_authorization:
    token_polling_interval: 10s
    user_code:
      entropy_preset: low
secrets:
  system: [${SECRET}]
`);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('serve.public.cors.options_passthrough');
    expect(config.serve.cookies.names.device_csrf).toBe('my_device_csrf');
    expect(config.urls.device).toEqual({
      verification: 'https://ui.example/device',
      success: 'https://ui.example/device/done',
    });
    expect([config.ttl.device_user_code, config.ttl.vc_nonce]).toEqual([300_000, 1_800_000]);
    expect(config.oauth2.device_authorization.token_polling_interval).toBe(10_000);
    expect(config.oauth2.device_authorization.user_code.entropy_preset).toBe('low');
    expect(
      problems(() =>
        loadConfig({ overrides: { 'oauth2.device_authorization.user_code.length': 4, 'secrets.system': [SECRET] } }),
      ),
    ).toEqual(['oauth2.device_authorization.user_code.length: must be at least 6']);
  });
});
