// The configuration reference (docs/configuration.md), made from the services' zod config schemas: every
// variable with its type, default and description as the schema says, so the reference cannot drift.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from '@mds/config';
import { parse } from 'yaml';

export const repositoryRoot = join(import.meta.dirname, '..', '..');
export const configurationFile = join(repositoryRoot, 'docs', 'configuration.md');

/** A service and the module and export its config schema comes from (as deploy/values/<service>.yaml names them). */
export interface ServiceSchemaSource {
  name: string;
  module: string;
  exportName: string;
}

/** One variable of one service's schema, as the reference shows it. */
export interface Variable {
  name: string;
  type: string;
  default: string;
  description: string | undefined;
  secret: boolean;
}

/**
 * Every service with a values file, by the same convention as the deploy tests: `<package>/config`'s
 * `configSchema`. Releases of one package (the sender, once per messenger) are one service here, named by its
 * package with its releases: `sender (max-sender, telegram-sender)`.
 */
export function serviceSchemaSources(): ServiceSchemaSource[] {
  const dir = join(repositoryRoot, 'deploy', 'values');
  const releases = readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => {
      const values = parse(readFileSync(join(dir, file), 'utf8')) as {
        service: { name: string; package: string; configModule?: string; configExport?: string };
      };
      return {
        name: values.service.name,
        workspace: values.service.package.replace(/^@mds\//, ''),
        module: values.service.configModule ?? `${values.service.package}/config`,
        exportName: values.service.configExport ?? 'configSchema',
      };
    });
  const bySchema = new Map<string, ServiceSchemaSource & { releases: string[]; workspace: string }>();
  for (const { name, workspace, module, exportName } of releases) {
    const key = `${module}#${exportName}`;
    const entry = bySchema.get(key) ?? { name, workspace, module, exportName, releases: [] };
    entry.releases.push(name);
    bySchema.set(key, entry);
  }
  return [...bySchema.values()]
    .map(({ name, workspace, module, exportName, releases: names }) => ({
      name: names.length > 1 ? `${workspace} (${names.sort().join(', ')})` : name,
      module,
      exportName,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export async function loadSchema(source: ServiceSchemaSource): Promise<z.ZodObject> {
  const exports = (await import(source.module)) as Record<string, unknown>;
  const schema = exports[source.exportName];
  if (!(schema instanceof z.ZodObject))
    throw new Error(`${source.module} exports no zod object ${source.exportName}`);
  return schema;
}

const inner = (schema: z.ZodType): z.ZodType | undefined => {
  const def = schema.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
  if (def.type === 'pipe') return def.in;
  return def.innerType;
};

/** The schema and each wrapper inside it (default, optional, pipe's input ...), outermost first. */
function layers(schema: z.ZodType): z.ZodType[] {
  const out: z.ZodType[] = [];
  for (let current: z.ZodType | undefined = schema; current && out.length < 10; current = inner(current))
    out.push(current);
  return out;
}

const code = (value: string) => (value === '' ? 'empty' : `\`${value}\``);

function typeOf(schema: z.ZodType): string {
  const base = layers(schema).at(-1)!;
  const def = base.def as { type: string; format?: string; entries?: Record<string, string> };
  if (def.type === 'enum') {
    const values = Object.values(def.entries ?? {});
    if (values.includes('true') && values.includes('false')) return 'boolean';
    return values.map(code).join(', ');
  }
  if (def.type === 'number') {
    const format = (base as z.ZodNumber).format;
    return format && /int/.test(format) ? 'integer' : 'number';
  }
  if (def.type === 'string') {
    if (def.format === 'url') return 'URL';
    const least = (base as z.ZodString).minLength;
    return least !== null && least > 1 ? `string, ${least}+ characters` : 'string';
  }
  return def.type;
}

function defaultOf(schema: z.ZodType): string {
  for (const layer of layers(schema)) {
    const def = layer.def as { type: string; defaultValue?: unknown };
    if (def.type === 'default') {
      const value = def.defaultValue;
      return code(Array.isArray(value) ? value.join(',') : String(value));
    }
    if (def.type === 'optional') return 'unset';
  }
  return '**required**';
}

function secretOf(schema: z.ZodType): boolean {
  return layers(schema).some((layer) => layer.meta()?.secret === true);
}

function descriptionOf(schema: z.ZodType): string | undefined {
  return layers(schema).find((layer) => layer.description)?.description;
}

export function variablesOf(schema: z.ZodObject): Variable[] {
  return Object.entries(schema.shape).map(([name, field]) => ({
    name,
    type: typeOf(field as z.ZodType),
    default: defaultOf(field as z.ZodType),
    description: descriptionOf(field as z.ZodType),
    secret: secretOf(field as z.ZodType),
  }));
}

/** A table cell: pipes escaped, and angle brackets, so `<url>` reads as text rather than HTML. */
const cell = (text: string) => text.replace(/[|<>]/g, (c) => `\\${c}`).replace(/\s+/g, ' ');

function row(variable: Variable, services?: string): string {
  const type = variable.secret ? `${variable.type} (secret)` : variable.type;
  const cells = [`\`${variable.name}\``, type, variable.default, variable.description ?? ''];
  if (services !== undefined) cells.push(services);
  return `| ${cells.map(cell).join(' | ')} |`;
}

const HEADER = `# Configuration reference

<!-- Generated by \`npm run docs:config\` from the services' zod config schemas (each service's
src/config.ts); \`npm test\` fails when this file is not what the schemas say. Edit the schemas, not this. -->

Every setting is an environment variable, validated with zod when the service starts: a bad or missing one
stops the start with the variable named. Any setting \`NAME\` may instead be given as \`NAME_FILE\`, the path of
a file holding it (how the Helm chart passes every secret: mounted Secrets, never environment variables);
setting both is an error. Secrets (marked _secret_ below) are never logged: they are printed redacted (URLs
without their password or credential query parameters such as \`DATABASE_URL\`'s \`?password=\`), and the
sender scrubs every Bot API error of the bot's token before it goes anywhere (grammY's network errors carry it
in the request URL; payloads and headers are dropped), which a test checks over every failure path of every
messenger (\`services/sender/src/secrets-in-logs.*.int.test.ts\`). The Helm values
(\`deploy/values/<service>.yaml\`) set the same variables; \`npm test\` checks that every variable they set exists.
Each service's one-shot deploy step (\`node dist/deploy-step.js\`: migrations, then topics) reads only
\`LOG_LEVEL\` and the Kafka and PostgreSQL settings (and a sender's \`MESSENGER\`). Besides these, tracing reads
the standard \`OTEL_*\` variables (\`OTEL_EXPORTER_OTLP_ENDPOINT\`
unset: off; [deploy/README.md](../deploy/README.md#tracing)), and the local infrastructure of \`npm start\` and
\`npm test\` has [settings of its own](local-development.md#settings-of-the-local-infrastructure).
`;

/**
 * The whole reference: first the settings several services share with the same meaning and default (with the
 * services that have them), then each service's own.
 */
export async function renderConfiguration(): Promise<string> {
  const services = serviceSchemaSources();
  const perService = new Map<string, Variable[]>();
  for (const source of services) perService.set(source.name, variablesOf(await loadSchema(source)));

  const signature = (v: Variable) => JSON.stringify([v.name, v.type, v.default, v.description, v.secret]);
  const holders = new Map<string, { variable: Variable; services: string[] }>();
  for (const [service, variables] of perService)
    for (const variable of variables) {
      const entry = holders.get(signature(variable)) ?? { variable, services: [] };
      entry.services.push(service);
      holders.set(signature(variable), entry);
    }
  const shared = [...holders.values()].filter((entry) => entry.services.length > 1);
  const sharedKeys = new Set(shared.map((entry) => signature(entry.variable)));

  const lines = [HEADER, '## Shared settings', ''];
  lines.push('| variable | type | default | meaning | services |', '| --- | --- | --- | --- | --- |');
  for (const { variable, services: names } of shared)
    lines.push(row(variable, names.length === services.length ? 'every service' : names.join(', ')));
  for (const source of services) {
    const own = perService.get(source.name)!.filter((v) => !sharedKeys.has(signature(v)));
    lines.push('', `## ${source.name}`, '', `From \`${source.exportName}\` of \`${source.module}\`.`, '');
    lines.push('| variable | type | default | meaning |', '| --- | --- | --- | --- |');
    for (const variable of own) lines.push(row(variable));
  }
  return `${lines.join('\n')}\n`;
}
