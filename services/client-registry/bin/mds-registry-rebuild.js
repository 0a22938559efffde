#!/usr/bin/env node
// mds-registry-rebuild's launcher (see bin/mds-admin.js for why it lives outside dist): `mds-replay rebuild
// --service client-registry` finds it in node_modules/.bin on a fresh install.
let cli;
try {
  cli = await import('@mds/client-registry/rebuild-cli');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/rebuild-cli.js'))
    throw error;
  console.error(
    'mds-registry-rebuild is not built: run `npx turbo run build --filter=@mds/client-registry` first',
  );
  process.exit(2);
}
process.exitCode = await cli.main(process.argv.slice(2));
