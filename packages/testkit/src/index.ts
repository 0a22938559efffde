export {
  RunningService,
  simulatorAndRegistry,
  Stack,
  type ServiceDefinition,
  type StackOptions,
} from './harness.js';
export {
  startRegistry,
  startSimulator,
  type RegistryOptions,
  type RegistryProcess,
  type SimulatorProcess,
} from './services.js';
