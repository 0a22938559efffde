#!/usr/bin/env node
// mds-admin: the admin API from a terminal. REGISTRY_URL (default http://127.0.0.1:8081) and
// REGISTRY_ADMIN_TOKEN say which registry and how to get in; the members commands go to the dashboard's
// operator API (DASHBOARD_URL, default http://127.0.0.1:8085, and DASHBOARD_ADMIN_TOKEN).
import { parseArgs } from 'node:util';

const USAGE = `usage: mds-admin <command> [arguments]

  companies create --name <name>            create a company
  companies list                            list companies
  companies show <company>                  a company: keys (prefixes only), webhook, bots
  keys issue <company> [--label <text>]     issue an API key (shown once)
  keys revoke <company> <key id>            revoke an API key
  webhook set <company> <url>               set the webhook URL (a signing secret is made the first time)
  webhook secrets <company>                 show the signing secrets valid now
  webhook rotate <company>                  new signing secret; the old one signs too for a while
  webhook enable|disable <company>          turn delivery to the endpoint on or off
  bots add <company> --messenger telegram|max --name <name> --token <token> [--default]
  bots list <company>                       list bots
  bots remove <company> <bot id>            remove a bot
  bots default <company> <bot id>           make a bot its messenger's default
  clients show <company> <phone>            a client's links to bots
  clients forget <company> <phone>          erase a person: their key destroyed, their data gone everywhere
  members add <company> --email <email> [--role owner|developer|viewer] [--name <name>]
                                            a dashboard member (owner unless told): prints their one-time link
  members list <company>                    the company's dashboard members
  members reset <company> --email <email>   a one-time password reset link for a member

environment: REGISTRY_URL (default http://127.0.0.1:8081), REGISTRY_ADMIN_TOKEN (required);
             for members: DASHBOARD_URL (default http://127.0.0.1:8085), DASHBOARD_ADMIN_TOKEN (required)`;

/** One admin API call; `dashboard` ones go to the dashboard's operator API, the rest to the registry's. */
type Call = { method: string; path: string; body?: unknown; target?: 'dashboard' };

/**
 * `clients forget`: erases one person of one company (docs/personal-data.md). The registry destroys their
 * key (everything sealed under it in Kafka reads as erased), removes their links and tells every service
 * (ClientForgotten) to delete what it holds of them. Answers {subject_id, keys_destroyed, links_removed}.
 */
export function forgetClientCall(company: string, phone: string): Call {
  return {
    method: 'POST',
    path: `/companies/${encodeURIComponent(company)}/clients/${encodeURIComponent(phone)}/forget`,
  };
}

export function toCall(argv: string[]): Call {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      label: { type: 'string' },
      messenger: { type: 'string' },
      token: { type: 'string' },
      default: { type: 'boolean' },
      email: { type: 'string' },
      role: { type: 'string' },
    },
  });
  const [group, action, company = '', extra = ''] = positionals;
  const c = `/companies/${encodeURIComponent(company)}`;
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new Error(`missing ${what}\n\n${USAGE}`);
    return value;
  };
  switch (`${group} ${action}`) {
    case 'companies create':
      return { method: 'POST', path: '/companies', body: { name: need(values.name, '--name') } };
    case 'companies list':
      return { method: 'GET', path: '/companies' };
    case 'companies show':
      return { method: 'GET', path: need(company, '<company>') && c };
    case 'keys issue':
      return {
        method: 'POST',
        path: `${need(company, '<company>') && c}/api-keys`,
        body: { label: values.label ?? '' },
      };
    case 'keys revoke':
      return { method: 'DELETE', path: `${c}/api-keys/${encodeURIComponent(need(extra, '<key id>'))}` };
    case 'webhook set':
      return { method: 'PUT', path: `${c}/webhook`, body: { url: need(extra, '<url>') } };
    case 'webhook secrets':
      return { method: 'GET', path: `${c}/webhook/secrets` };
    case 'webhook rotate':
      return { method: 'POST', path: `${c}/webhook/rotate-secret` };
    case 'webhook enable':
    case 'webhook disable':
      return { method: 'POST', path: `${c}/webhook/${action}` };
    case 'bots add':
      return {
        method: 'POST',
        path: `${c}/bots`,
        body: {
          messenger: need(values.messenger, '--messenger'),
          name: need(values.name, '--name'),
          token: need(values.token, '--token'),
          default: values.default ?? false,
        },
      };
    case 'bots list':
      return { method: 'GET', path: `${c}/bots` };
    case 'bots remove':
      return { method: 'DELETE', path: `${c}/bots/${encodeURIComponent(need(extra, '<bot id>'))}` };
    case 'bots default':
      return { method: 'PUT', path: `${c}/bots/${encodeURIComponent(need(extra, '<bot id>'))}/default` };
    case 'clients show':
      return { method: 'GET', path: `${c}/clients/${encodeURIComponent(need(extra, '<phone>'))}` };
    case 'clients forget':
      return forgetClientCall(need(company, '<company>'), need(extra, '<phone>'));
    case 'members add':
      return {
        method: 'POST',
        path: `${need(company, '<company>') && c}/members`,
        body: {
          email: need(values.email, '--email'),
          role: values.role ?? 'owner',
          ...(values.name ? { name: values.name } : {}),
        },
        target: 'dashboard',
      };
    case 'members list':
      return { method: 'GET', path: `${need(company, '<company>') && c}/members`, target: 'dashboard' };
    case 'members reset':
      return {
        method: 'POST',
        path: `${need(company, '<company>') && c}/members/reset`,
        body: { email: need(values.email, '--email') },
        target: 'dashboard',
      };
    default:
      throw new Error(USAGE);
  }
}

export async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<{ ok: boolean; output: string }> {
  const call = toCall(argv);
  const dashboard = call.target === 'dashboard';
  const token = dashboard ? env.DASHBOARD_ADMIN_TOKEN : env.REGISTRY_ADMIN_TOKEN;
  if (!token) throw new Error(`${dashboard ? 'DASHBOARD_ADMIN_TOKEN' : 'REGISTRY_ADMIN_TOKEN'} is not set`);
  const base = dashboard
    ? (env.DASHBOARD_URL ?? 'http://127.0.0.1:8085')
    : (env.REGISTRY_URL ?? 'http://127.0.0.1:8081');
  const response = await fetch(`${base}/admin/v1${call.path}`, {
    method: call.method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(call.body ? { 'content-type': 'application/json' } : {}),
    },
    ...(call.body ? { body: JSON.stringify(call.body) } : {}),
  });
  const text = await response.text();
  if (!response.ok) {
    const problem = (text ? JSON.parse(text) : {}) as {
      title?: string;
      detail?: string;
      errors?: { pointer: string; detail: string }[];
    };
    const fields = (problem.errors ?? []).map((e) => `\n  ${e.pointer}: ${e.detail}`).join('');
    return {
      ok: false,
      output: `${response.status} ${problem.title ?? response.statusText}: ${problem.detail ?? ''}${fields}`,
    };
  }
  return { ok: true, output: text ? JSON.stringify(JSON.parse(text), null, 2) : 'done' };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run(process.argv.slice(2), process.env).then(
    ({ ok, output }) => {
      (ok ? console.log : console.error)(output);
      process.exitCode = ok ? 0 : 1;
    },
    (error: Error) => {
      console.error(error.message);
      process.exitCode = 2;
    },
  );
}
