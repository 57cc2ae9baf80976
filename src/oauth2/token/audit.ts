/**
 * The audit dependency of the token endpoint (`AuditPort`, store/token-plan.ts) over the core's audit
 * events: the domain's wiring hands it to the token service, and nothing else in token issuance reads
 * whether audit rows are on.
 */
import { audit, auditEnabled } from '../../core/audit/events.ts';
import type { AuditPort } from '../store/token-plan.ts';

export const coreAudit: AuditPort = { recordsRows: auditEnabled, record: audit };
