// `npm run docs:config`: writes docs/configuration.md from the services' config schemas, formatted by Prettier
// as the rest of the repository is.
import { writeFileSync } from 'node:fs';
import { configurationFile } from './configuration.js';
import { formattedConfiguration } from './format.js';

writeFileSync(configurationFile, await formattedConfiguration());
console.log(`wrote ${configurationFile}`);
