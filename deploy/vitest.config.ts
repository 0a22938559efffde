import { vitestConfig } from '../vitest.shared.js';

const config = vitestConfig();
// Builds (once) or finds the pinned Helm and kube-strict before any test renders the chart.
config.test!.globalSetup = ['test/tools-setup.ts'];
export default config;
