// First: tracing (when OTEL_* variables ask for it) must be set up before what it instruments is loaded.
import '@mds/telemetry/start';
import { serviceMain } from '@mds/service-kit';
import { startTelegramSender } from './app.js';
import { configSchema } from './config.js';

await serviceMain({ name: 'telegram-sender', configSchema, start: startTelegramSender });
