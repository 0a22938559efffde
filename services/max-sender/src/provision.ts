import { topics, deliveryTopic } from '@mds/contracts';
import { senderDeployment } from '@mds/sender';
import { SCHEMA } from './app.js';

/** The sender's journal (schema max_sender) and its topics; startSender provisions the same at start-up. */
export const deployment = senderDeployment({
  service: 'max-sender',
  schema: SCHEMA,
  deliveryTopic: deliveryTopic('max'),
});

export const TOPICS = deployment.topics;
