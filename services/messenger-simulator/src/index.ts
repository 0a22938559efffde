// For running the simulator inside another package's tests: start it on a free port, point clients at `url`.
export { loadSimulatorConfig, simulatorSchema, type SimulatorConfig } from './config.js';
export { startSimulatorServer, systemDeps, type SimulatorServer, type StartOptions } from './server.js';
export { createSimulator, type Simulator, type SimulatorOptions } from './simulator.js';
