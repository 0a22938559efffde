#!/usr/bin/env node
// mds-admin's launcher. It lives outside dist so that npm links it (node_modules/.bin/mds-admin) even when the
// workspace is installed before it is built. It is only ever run, never imported, so it needs no "am I the main
// module" check (comparing import.meta.url with process.argv[1] fails when run through a symlink, as bins are).
// It loads the CLI by the package's own name: the built one, or the sources under --conditions=@mds/source.
let cli;
try {
  cli = await import('@mds/client-registry/cli');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/cli/program.js'))
    throw error;
  console.error('mds-admin is not built: run `npx turbo run build --filter=@mds/client-registry` first');
  process.exit(2);
}
await cli.main();
