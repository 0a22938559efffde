import { topics, deliveryTopic } from '@mds/contracts';
import { senderDeployment } from '@mds/sender';
import { SCHEMA } from './app.js';

/** The sender's journal (schema telegram_sender) and its topics; startSender provisions the same at start-up. */
export const deployment = senderDeployment({
  service: 'telegram-sender',
  schema: SCHEMA,
  deliveryTopic: deliveryTopic('telegram'),
});

export const TOPICS = deployment.topics;
