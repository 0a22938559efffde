import { type Command, InvalidArgumentError } from 'commander';
import { MAX_ENDPOINT_RATE_LIMIT, MAX_WEBHOOK_ENDPOINTS, WEBHOOK_EVENT_TYPES } from '@mds/contracts';
import { type CliContext, segment } from '../context.js';

type Settings = { url?: string; description?: string; eventTypes?: string[]; rateLimit?: number | false };

/** "all" (or nothing) is every type; else a comma-separated list, checked by the registry. */
const eventTypes = (list: string) =>
  list.trim() === 'all'
    ? []
    : list
        .split(',')
        .map((type) => type.trim())
        .filter(Boolean);

function rateLimit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_ENDPOINT_RATE_LIMIT)
    throw new InvalidArgumentError(
      `a whole number of requests per second from 1 to ${MAX_ENDPOINT_RATE_LIMIT}`,
    );
  return n;
}

/** The request body of the settings given (a setting not given is left as it is). */
const settingsBody = (o: Settings) => ({
  ...(o.url === undefined ? {} : { url: o.url }),
  ...(o.description === undefined ? {} : { description: o.description }),
  ...(o.eventTypes === undefined ? {} : { event_types: o.eventTypes }),
  ...(o.rateLimit === undefined ? {} : { rate_limit_per_second: o.rateLimit === false ? null : o.rateLimit }),
});

const settingOptions = (command: Command) =>
  command
    .option('--description <text>', 'what the endpoint is for')
    .option(
      '--event-types <list>',
      `comma-separated notification types it receives (${WEBHOOK_EVENT_TYPES.join(', ')}), or "all" (also types added later)`,
      eventTypes,
    )
    .option('--rate-limit <n>', 'at most this many requests per second to it', rateLimit);

type EndpointRow = {
  id: string;
  url: string;
  enabled: boolean;
  event_types: string[];
  description: string;
  disabled_reason: string | null;
};

/** An endpoint for a person: its settings, and its secrets by id only (`secrets` shows them). */
const row = (e: EndpointRow) => ({
  id: e.id,
  url: e.url,
  enabled: e.disabled_reason ? `no (${e.disabled_reason})` : e.enabled ? 'yes' : 'no',
  event_types: e.event_types.length ? e.event_types.join(',') : 'all',
  description: e.description,
});

/** `mds-admin webhook endpoints ...`: a company's endpoints (at most MAX_WEBHOOK_ENDPOINTS), each on its own. */
export function webhookEndpointCommands(webhook: Command, cli: CliContext) {
  const group = webhook
    .command('endpoints')
    .description(
      `a company's webhook endpoints (up to ${MAX_WEBHOOK_ENDPOINTS}), each with its event types, secrets and state`,
    );
  const path = (company: string, endpoint?: string, rest = '') =>
    `/companies/${segment(company)}/webhook/endpoints${endpoint === undefined ? '' : `/${segment(endpoint)}`}${rest}`;
  const company = (c: Command) => c.argument('<company>', 'company id');
  const endpoint = (c: Command) => company(c).argument('<endpoint-id>', 'endpoint id (ep_...)');

  company(
    group.command('list').description('list the endpoints (ep_default, the single URL of old, first)'),
  ).action((companyId: string) =>
    cli.call(
      { method: 'GET', path: path(companyId) },
      { view: (body) => (body as { endpoints: EndpointRow[] }).endpoints.map(row) },
    ),
  );
  settingOptions(
    company(group.command('add').description('add an endpoint; its signing secret is made and shown')),
  )
    .requiredOption('--url <url>', 'https URL the notifications are posted to')
    .option('--disabled', 'add it turned off', false)
    .addHelpText(
      'after',
      '\nExample:\n  mds-admin webhook endpoints add <company> --url https://acme.example/hooks --event-types message.status',
    )
    .action((companyId: string, o: Settings & { disabled: boolean }) =>
      cli.call(
        { method: 'POST', path: path(companyId), body: { ...settingsBody(o), enabled: !o.disabled } },
        { headline: () => 'Endpoint added; verify its notifications with this signing secret:' },
      ),
    );
  endpoint(group.command('show').description('show an endpoint')).action((companyId: string, id: string) =>
    cli.call({ method: 'GET', path: path(companyId, id) }),
  );
  settingOptions(endpoint(group.command('update').description('change what is given; the rest stays')))
    .option('--url <url>', 'a new URL (the signing secret stays)')
    .option('--no-rate-limit', 'no rate limit of its own')
    .action((companyId: string, id: string, o: Settings) =>
      cli.call({ method: 'PATCH', path: path(companyId, id), body: settingsBody(o) }),
    );
  endpoint(group.command('remove').description('remove an endpoint and its secrets')).action(
    (companyId: string, id: string) =>
      cli.call({ method: 'DELETE', path: path(companyId, id) }, { headline: () => `removed ${id}` }),
  );
  endpoint(
    group
      .command('rotate-secret')
      .description('make a new signing secret; the old one signs too for a while'),
  ).action((companyId: string, id: string) =>
    cli.call({ method: 'POST', path: path(companyId, id, '/rotate-secret') }),
  );
  endpoint(group.command('secrets').description('show the signing secrets valid now')).action(
    (companyId: string, id: string) => cli.call({ method: 'GET', path: path(companyId, id, '/secrets') }),
  );
  endpoint(group.command('enable').description('turn delivery to the endpoint on')).action(
    (companyId: string, id: string) => cli.call({ method: 'POST', path: path(companyId, id, '/enable') }),
  );
  endpoint(group.command('disable').description('turn delivery to the endpoint off'))
    .option('--reason <text>', 'why, kept with the endpoint')
    .action((companyId: string, id: string, o: { reason?: string }) =>
      cli.call({
        method: 'POST',
        path: path(companyId, id, '/disable'),
        body: o.reason === undefined ? {} : { reason: o.reason },
      }),
    );
}
