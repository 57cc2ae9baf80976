/**
 * The configuration of the program, composed here: the core's part and each face's (their sections,
 * checks and derived defaults), registered with the core's registry (core/config/schema.ts) when
 * this module is loaded, before any configuration is read, and declared to its types
 * (`ConfigSpecs`). Whatever reads configuration imports `loadConfig` from here (src/container.ts
 * imports this module, so a container implies it).
 *
 * The admin API families of the domains are registered here too (core/http/admin-auth.ts), before
 * any configuration is read: the entries of `serve.admin.auth.api_keys` name them.
 *
 * The console's section is declared here: the console is mounted by the server, above the
 * container, and its operators default to the development login app's users (`dev_ui`, the OAuth
 * 2.0 domain's).
 *
 * `npm run docs:config` runs this file: it rewrites the table of docs/configuration.md.
 */
import { z } from 'zod';
import { writeConfigDocs } from './core/config/docs.ts';
import { type ConfigPart, dur, leaf, list, registerConfig } from './core/config/schema.ts';
import { CORE_CONFIG } from './core/config/sections.ts';
import { registerAdminFamilies } from './core/http/admin-auth.ts';
import { DSYNC_ADMIN_FAMILIES, DSYNC_CONFIG } from './dsync/index.ts';
import { OAUTH2_CONFIG } from './oauth2/index.ts';

const consoleSpec = {
  console: {
    enabled: leaf(
      'bool',
      z.boolean().optional(),
      'Serve the operator console under `/console` on the admin listener (see Operator console). It signs operators in as an OAuth 2.0 client of this server (`gatehouse-console`).',
      '(on when `console.operators` is not empty)',
    ),
    operators: list(
      [],
      'Subjects allowed to use the operator console. Empty with the development login app on (`dev_ui.enabled`): the subjects of `dev_ui.users` (by default `ada@example.com`).',
    ),
    session_ttl: dur(
      '1h',
      'Lifetime of an operator console session (its cookie); the operator signs in again after it.',
    ),
  },
};

const CONSOLE_CONFIG: ConfigPart<typeof consoleSpec> = {
  spec: consoleSpec,
  check(c) {
    if (c.console.enabled === true && c.console.operators.length === 0 && !(c.dev_ui.enabled ?? c.dsn === 'memory')) {
      return ['console.enabled: the operator console needs at least one subject in console.operators'];
    }
    return [];
  },
  derive(m) {
    const c = { ...m };
    // The console's operators: with the development login app on and none configured, its test users.
    const operators = c.console.operators.length
      ? c.console.operators
      : c.dev_ui.enabled
        ? (c.dev_ui.users ?? []).map((u) => u.subject)
        : [];
    m.console = { ...c.console, enabled: c.console.enabled ?? operators.length > 0, operators };
  },
};

// The parts' key trees, declared to the core's registry type: `Config` holds every key of every part.
declare module './core/config/schema.ts' {
  interface ConfigSpecs {
    core: (typeof CORE_CONFIG)['spec'];
    oauth2: (typeof OAUTH2_CONFIG)['spec'];
    console: (typeof CONSOLE_CONFIG)['spec'];
    dsync: (typeof DSYNC_CONFIG)['spec'];
  }
}

registerConfig(
  [CORE_CONFIG, OAUTH2_CONFIG, CONSOLE_CONFIG, DSYNC_CONFIG],
  // The order of docs/configuration.md: its table is generated in it.
  [
    'dsn',
    'dev',
    'dev_ui',
    'console',
    'serve',
    'urls',
    'secrets',
    'ttl',
    'strategies',
    'oauth2',
    'oidc',
    'webfinger',
    'feature_flags',
    'clients',
    'db',
    'rate_limit',
    'worker',
    'queue',
    'tracing',
    'metrics',
    'audit',
    'janitor',
    'log',
    'dsync',
  ],
);

// The domains' admin API families (`gatehouse:admin:<family>`), beside the core's: registered before
// any configuration is read (the entries of `serve.admin.auth.api_keys` name them) and declared to
// the core's type, so that every route's family is checked.
declare module './core/http/admin-auth.ts' {
  interface AdminFamilies extends Record<keyof typeof DSYNC_ADMIN_FAMILIES, true> {}
}

registerAdminFamilies(DSYNC_ADMIN_FAMILIES);

export { type Config, ConfigError, loadConfig, redactedConfig } from './core/config/load.ts';
export { configLeaves } from './core/config/schema.ts';

if (import.meta.main) writeConfigDocs();
