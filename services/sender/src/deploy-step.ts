// The deploy step: migrates the sender's schema of MESSENGER's messenger and provisions its topics, then exits
// (0 done, 1 failed). Run once per install or upgrade, before new pods start (the Helm chart's
// pre-install/pre-upgrade Job).
import { deployStepProcess } from '@mds/service-kit/platform';
import { loadMessengerPlugins } from '@mds/service-kit';
import { deployStepConfigSchema } from './config.js';
import { senderDeployment } from './deployment.js';
import { messengerOfProcess } from './settings.js';

await loadMessengerPlugins('sender deploy step');
await deployStepProcess(senderDeployment(messengerOfProcess()), deployStepConfigSchema);
