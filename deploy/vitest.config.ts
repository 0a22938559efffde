import { vitestConfig } from '../vitest.shared.js';

const config = vitestConfig({ testTimeout: 60_000 });
// Builds (once) or finds the pinned Helm before any test renders the chart.
config.test!.globalSetup = ['test/helm-setup.ts'];
export default config;
