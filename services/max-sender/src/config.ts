import { databaseEnv, kafkaEnv, requireSasl, serviceEnv, z } from '@mds/config';
import { requireWebhookSettings, senderEnv } from '@mds/sender';

export const configSchema = z
  .object({
    // MAX: 30 requests/s per bot (official; update polls count); 2 messages/s per chat (community,
    // unconfirmed), so the per-chat default stays at that.
    ...senderEnv({ port: 8083, botRatePerSecond: 30, chatRatePerSecond: 2 }),
    MAX_API_BASE: z
      .url()
      .default('https://platform-api2.max.ru')
      .transform((url) => url.replace(/\/+$/, ''))
      .describe('The MAX Bot API base URL: https://platform-api2.max.ru, or the simulator.'),
  })
  .superRefine(requireSasl)
  .superRefine(requireWebhookSettings);

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
