import { vitestConfig } from '../vitest.shared.js';

const config = vitestConfig({ infra: true, testTimeout: 120_000 });
// Each file starts a stack of its own (its topics, database, ports; some their own brokers) and spends most of
// its time waiting on it (a fifth of a core for a sender crash under load): two files at a time, the longest
// first (vitest keeps each file's last duration), halve the suite on two cores. MDS_E2E_FILES changes it.
config.test!.fileParallelism = true;
config.test!.maxWorkers = Number(process.env.MDS_E2E_FILES ?? 2);
export default config;
