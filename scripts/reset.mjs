// `npm run reset`: empties the run directory of `npm start` (.run/dev: the database, the Kafka log, the
// simulator's world, the demo company, secrets and logs), so the next `npm start` begins from scratch.
import { devRunDir, emptyRunDir } from './run-dir.mjs';

try {
  console.log(`[reset] ${emptyRunDir(devRunDir())}`);
} catch (error) {
  console.error(`[reset] ${error.message}`);
  process.exit(1);
}
