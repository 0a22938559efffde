// First: the deployment's name, then tracing (when OTEL_* variables ask for it), set up before what it instruments
// is loaded.
import './deployment-name.js';
import '@mds/telemetry/start';
import { loadMessengerPlugins, serviceMain } from '@mds/service-kit';
import { startMessengerSender } from './app.js';
import { configSchema } from './config.js';
import { messengerOfProcess } from './settings.js';

// One deployment per messenger (MESSENGER), under its catalogue name (telegram-sender, max-sender); a plugin's
// messenger is in the catalogue once its module is loaded (serviceMain's own load is then a no-op).
await loadMessengerPlugins('sender');
const { sender } = messengerOfProcess();
await serviceMain({ name: sender, configSchema, start: startMessengerSender });
