import { databaseEnv, kafkaEnv, requireSasl, serviceEnv, z } from '@mds/config';
import { requireWebhookSettings, senderEnv } from '@mds/sender';

export const configSchema = z
  .object({
    ...senderEnv({ port: 8082, botRatePerSecond: 30, chatRatePerSecond: 1 }),
    TELEGRAM_API_ROOT: z
      .url()
      .default('https://api.telegram.org')
      .transform((url) => url.replace(/\/+$/, ''))
      .describe('The Bot API root (no trailing slash): https://api.telegram.org, or the simulator.'),
  })
  .superRefine(requireSasl)
  .superRefine(requireWebhookSettings);

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
