import { vitestConfig } from '../../vitest.shared.js';

export default vitestConfig({ testTimeout: 30_000 });
