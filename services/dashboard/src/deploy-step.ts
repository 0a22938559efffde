// The deploy step: migrates the dashboard's schema and provisions the topics it reads, then exits (0 done, 1
// failed). Run once per install or upgrade, before new pods start (the Helm chart's pre-install/pre-upgrade Job).
import { createLogger } from '@mds/logging';
import { loadConfigOrExit } from '@mds/service-kit';
import { deployStepConfigSchema } from './config.js';
import { runDeployStep } from './provision.js';

const config = loadConfigOrExit('dashboard deploy step', deployStepConfigSchema);
const logger = createLogger({ service: 'dashboard-deploy-step', level: config.LOG_LEVEL });
try {
  const { migrations } = await runDeployStep(config, logger);
  logger.info({ migrations }, 'deploy step done');
  logger.flush();
  process.exit(0);
} catch (error) {
  logger.fatal({ err: error }, 'deploy step failed');
  logger.flush();
  process.exit(1);
}
