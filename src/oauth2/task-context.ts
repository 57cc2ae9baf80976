/**
 * What an OAuth 2.0 task file (tasks/oauth2_*.ts) may use: the domain's face. The worker passes the
 * container, which has it. Only task files import this; nothing inside the domain does.
 */
import type { OAuth2 } from './index.ts';

export interface OAuth2TaskContext {
  oauth2: OAuth2;
}
