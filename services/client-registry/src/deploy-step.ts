// The deploy step: migrates client-registry's schema and provisions its topics, then exits (0 done, 1 failed).
// Run once per install or upgrade, before new pods start (the Helm chart's pre-install/pre-upgrade Job).
import { deployStepProcess } from '@mds/service-kit/platform';
import { deployStepConfigSchema } from './config.js';
import { deployment } from './provision.js';

await deployStepProcess(deployment, deployStepConfigSchema);
