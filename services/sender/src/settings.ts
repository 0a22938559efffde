import { loadConfigOrExit } from '@mds/service-kit';
import { messengerSchema, senderMessenger } from './config.js';

/**
 * The messenger of this process (MESSENGER, checked against the catalogue and its providers): the deployment
 * logs, produces and consumes under its name. Exits with the reason when MESSENGER is missing or unknown, or
 * when a setting of before the one sender service is still set (it would otherwise be quietly ignored).
 */
export function messengerOfProcess(env: NodeJS.ProcessEnv = process.env) {
  const { MESSENGER } = loadConfigOrExit('sender', messengerSchema, env);
  const { definition, factory } = senderMessenger(MESSENGER);
  const former = factory.formerApiBaseSetting;
  if (former && env[former] !== undefined && env.MESSENGER_API_BASE === undefined) {
    console.error(
      `${definition.sender}: ${former} is now MESSENGER_API_BASE (one sender service for every messenger): set that instead`,
    );
    process.exit(1);
  }
  return definition;
}
