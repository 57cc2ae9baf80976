/** The payload of a back-channel logout job (`oauth2_backchannel_logout`, src/oauth2/tasks.ts). */
import { z } from 'zod';

/** Ids only; the client's current URI is read when the job runs. */
export const backchannelPayload = z.object({ sid: z.string().min(1), clientId: z.string().min(1) });
export type BackchannelPayload = z.output<typeof backchannelPayload>;
