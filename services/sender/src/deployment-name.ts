// Imported first by main.ts, before tracing starts: the spans of this process carry its deployment's name
// (telegram-sender, as the Helm chart's OTEL_SERVICE_NAME says), not its package's ("sender"), wherever it runs.
import { messengerNamed } from '@mds/contracts';

const messenger = process.env.MESSENGER;
if (messenger && !process.env.OTEL_SERVICE_NAME)
  process.env.OTEL_SERVICE_NAME = messengerNamed(messenger)?.sender ?? `${messenger}-sender`;
