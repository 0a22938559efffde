#!/usr/bin/env node
// mds-replay's launcher. It lives outside dist so that npm links it (node_modules/.bin/mds-replay) even when the
// workspace is installed before it is built (a bin inside dist is not linked then). It is only ever run, never
// imported, so it calls the CLI itself; it loads it by the package's own name: the built one, or the sources under
// --conditions=@mds/source.
let cli;
try {
  cli = await import('@mds/replay/cli');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/cli.js')) throw error;
  console.error('mds-replay is not built: run `npx turbo run build --filter=@mds/replay` first');
  process.exit(2);
}
process.exitCode = await cli.run(process.argv.slice(2));
