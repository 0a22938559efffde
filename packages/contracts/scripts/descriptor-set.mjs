// Compiles proto/ into a FileDescriptorSet (with its imports and source info) at dist/mds.binpb: the
// schema of every record on the log, for protoc --decode, buf, Spark's from_protobuf and Flink's
// protobuf format, and for mds-replay's typed tables. Shipped with each build of this package.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
mkdirSync(join(here, 'dist'), { recursive: true });
execFileSync(
  join(here, '../../node_modules/.bin/buf'),
  ['build', '../../proto', '--as-file-descriptor-set', '-o', 'dist/mds.binpb'],
  { cwd: here, stdio: 'inherit' },
);
