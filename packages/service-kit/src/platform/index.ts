export {
  deployStepProcess,
  provision,
  runDeployStep,
  type DeployStepConfig,
  type ServiceDeployment,
} from './deployment.js';
export {
  connectPublisher,
  openFoundation,
  serveService,
  startOutboxRelay,
  startRetention,
  type ServeOptions,
  type ServiceFoundation,
  type StartedLast,
} from './start.js';
