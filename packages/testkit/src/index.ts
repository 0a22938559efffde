export { RunningService } from './running-service.js';
export {
  senderService,
  simulatorAndRegistry,
  Stack,
  type ServiceDefinition,
  type StackOptions,
} from './harness.js';
export {
  startRegistry,
  startService,
  startSimulator,
  type RegistryOptions,
  type RegistryProcess,
  type SimulatorProcess,
} from './services.js';
