// Runs after `npm install`: npm scripts must run on the Node 24 that the `node` devDependency installs.
const major = Number(process.versions.node.split('.')[0]);
if (major !== 24) {
  console.error(
    `[check-node] npm scripts run on Node ${process.version}; this project needs Node 24 LTS. ` +
      'Run `npm install` again so node_modules/.bin/node (from the `node` devDependency) is installed.',
  );
  process.exit(1);
}
