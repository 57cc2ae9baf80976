/**
 * Ory Hydra 26 configuration keys that gatehouse knows but does not implement (yet). A config file
 * or environment written for Hydra that sets them still starts: each key set prints one warning
 * line and is ignored. Keys that are neither gatehouse's nor in this list stay an error.
 *
 * Source: Hydra v26.2.0's configuration JSON schema (`.schema/config.schema.json`) and the ory/x
 * schemas it references (`configx/serve.schema.json`, `configx/tls.schema.json`,
 * `configx/cors.schema.json`, `otelx/config.schema.json`). An entry covers every key below it. When
 * a key gets implemented (added to a part's spec), remove its entry here; a key in the schema wins
 * over this list anyway. These are the core's; each face's part lists those under its own sections
 * (`ConfigPart.notImplemented`), and the loader reads them all from the registry.
 */
export const HYDRA_NOT_IMPLEMENTED: readonly string[] = [
  // Tracing through Hydra's Jaeger and Zipkin exporters (gatehouse implements `tracing.provider: otel`).
  'tracing.providers.jaeger',
  'tracing.providers.zipkin',
  // Listener details.
  'serve.public.base_url',
  'serve.public.socket',
  'serve.public.request_log',
  'serve.admin.base_url',
  'serve.admin.socket',
  'serve.admin.request_log',
  'serve.tls.allow_termination_from',
  'serve.public.tls.allow_termination_from',
  'serve.admin.tls.allow_termination_from',
  'serve.cookies.same_site_legacy_workaround',
  // rs/cors's pass-through of preflights to the routes; gatehouse always answers them itself.
  'serve.public.cors.options_passthrough',
  'serve.admin.cors.options_passthrough',
  // Others.
  'urls.identity_provider',
  'db.ignore_unknown_table_columns',
  'log.redaction_text',
  'hsm',
  'profiling',
  'sqa',
  'cgroups',
  'version',
  // Hydra's feature flags are an open object; gatehouse implements the ones in schema.ts.
  'feature_flags',
];

/** Entries whose environment variable is too common a name to read as Hydra's (`VERSION`). */
export const HYDRA_FILE_ONLY: ReadonlySet<string> = new Set(['version']);

/** The entry of `entries` that covers `path` (the path itself or an ancestor), if any. */
export function hydraEntryFor(entries: readonly string[], path: string): string | undefined {
  return entries.find((e) => path === e || path.startsWith(`${e}.`));
}
