import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { secret, z } from '@mds/config';
import {
  configurationFile,
  loadSchema,
  renderConfiguration,
  serviceSchemaSources,
  variablesOf,
} from '../src/configuration.js';
import { formattedConfiguration } from '../src/format.js';

describe('the configuration reference', () => {
  it('docs/configuration.md is what the services’ config schemas say (else run `npm run docs:config`)', async () => {
    const committed = readFileSync(configurationFile, 'utf8');
    expect(committed, 'docs/configuration.md is stale: run `npm run docs:config`').toBe(
      await formattedConfiguration(),
    );
  });

  it('covers every service with a values file, and every variable of its schema with a description', async () => {
    const sources = serviceSchemaSources();
    expect(sources.map((s) => s.name)).toEqual(
      expect.arrayContaining(['client-registry', 'gateway', 'webhook-dispatcher', 'messenger-simulator']),
    );
    const rendered = await renderConfiguration();
    for (const source of sources) {
      expect(rendered).toContain(`## ${source.name}\n`);
      for (const variable of variablesOf(await loadSchema(source))) {
        expect(variable.description, `${source.name} ${variable.name} has no .describe()`).toBeTruthy();
        expect(rendered).toContain(`\`${variable.name}\``);
      }
    }
  });
});

describe('variablesOf', () => {
  const schema = z.object({
    PLAIN: z.string().describe('a string'),
    PORT: z.coerce.number().int().default(8080).describe('a port'),
    RATE: z.coerce.number().positive().default(2.5).describe('a rate'),
    MODE: z.enum(['a', 'b']).default('a').describe('a mode'),
    FLAG: z
      .enum(['true', 'false'])
      .default('false')
      .transform((v) => v === 'true')
      .describe('a flag'),
    TOKEN: secret(z.string().min(16).optional()).describe('a token'),
    ADDRESS: z.url().describe('an address'),
    UNDESCRIBED: z.string().optional(),
  });

  it('reads type, default, description and secrecy from the schema', () => {
    expect(variablesOf(schema)).toEqual([
      { name: 'PLAIN', type: 'string', default: '**required**', description: 'a string', secret: false },
      { name: 'PORT', type: 'integer', default: '`8080`', description: 'a port', secret: false },
      { name: 'RATE', type: 'number', default: '`2.5`', description: 'a rate', secret: false },
      { name: 'MODE', type: '`a`, `b`', default: '`a`', description: 'a mode', secret: false },
      { name: 'FLAG', type: 'boolean', default: '`false`', description: 'a flag', secret: false },
      {
        name: 'TOKEN',
        type: 'string, 16+ characters',
        default: 'unset',
        description: 'a token',
        secret: true,
      },
      { name: 'ADDRESS', type: 'URL', default: '**required**', description: 'an address', secret: false },
      { name: 'UNDESCRIBED', type: 'string', default: 'unset', description: undefined, secret: false },
    ]);
  });
});
