/**
 * Directory sync's metrics (label values are bounded: directory types, resources, operations,
 * outcomes). The face exports the family; the composition root registers it and adds its names to
 * the core's `Metrics`, so call sites record with `metrics.<name>` (core/observability/metrics.ts).
 */
import { counter, histogram } from '../core/observability/metrics.ts';

export const dsyncMetrics = {
  scimOperations: counter({
    name: 'gatehouse_scim_operations_total',
    help: 'SCIM requests by directory type, resource, operation and outcome.',
    labelNames: ['directory_type', 'resource', 'operation', 'outcome'] as const,
  }),
  webhookDeliveries: counter({
    name: 'gatehouse_webhook_deliveries_total',
    help: 'Webhook POST attempts by outcome (delivered, failed).',
    labelNames: ['outcome'] as const,
  }),
  webhookRetries: counter({
    name: 'gatehouse_webhook_retries_total',
    help: 'Webhook delivery job runs that were retries (attempt > 1).',
  }),
  webhookFailedPermanently: counter({
    name: 'gatehouse_webhook_failed_permanently_total',
    help: 'Webhook delivery jobs that used up their attempts.',
  }),
  webhookSenderReads: counter({
    name: 'gatehouse_webhook_sender_reads_total',
    help: "Reads of a directory's queued events by its real-time sender, by result (events, empty; empty ones are mostly the polls of lingering senders).",
    labelNames: ['result'] as const,
  }),
  webhookLatency: histogram({
    name: 'gatehouse_webhook_commit_to_receipt_seconds',
    help: 'Time from the commit of a directory change to the receiver accepting its webhook event.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600],
  }),
};
