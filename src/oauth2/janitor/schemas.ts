/** The janitor's targets and the payload of its task (`oauth2_janitor`, src/oauth2/tasks.ts). */
import { z } from 'zod';

export const JANITOR_TARGETS = ['tokens', 'requests', 'sessions', 'jtis', 'grants'] as const;
export type JanitorTarget = (typeof JANITOR_TARGETS)[number];

/** Task payload; the crontab adds `_cron`. No targets: all of them. */
export const janitorPayload = z.looseObject({ targets: z.array(z.enum(JANITOR_TARGETS)).optional() });
