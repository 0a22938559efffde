import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '@mds/local-infra';
import { eventually } from '@mds/local-infra/testing';
import { uniquePhone, type ReceivedWebhook, type SimulatedBot } from '../sandbox.js';
import { buildInfraStandIns, ComposeStack, readmeQuickStart } from './compose.js';
import { podman, podmanEnv } from './pod.js';
import {
  buildImages,
  composeProject,
  containersTestMode,
  removeTestRun,
  startContainerStack,
  testImageTag,
  type ContainerStack,
} from './stack.js';

// The images as platform teams run them: every service's image, built from this checkout, run in containers
// configured from the rendered Helm chart (environment, user, read-only root filesystem, writable volumes,
// ports, probes, grace period) against this test run's broker and PostgreSQL; the deploy-step Jobs first, as
// the chart's hooks run them. Then the flows a company meets, through the containerized gateway; the probes;
// and a graceful stop of every container with nothing lost. Skipped without podman, or with
// MDS_CONTAINERS_TEST=off.

const mode = containersTestMode();
const WAIT_MS = 90_000;
const tag = testImageTag();
let stack: ContainerStack;
let buildLog = '';
const exec = promisify(execFile);

function expectVerified(webhook: ReceivedWebhook, secrets: string[]): Record<string, unknown> {
  expect(webhook.verified).toBe(true);
  expect(new Webhook(secrets[0]!).verify(webhook.body, webhook.headers)).toEqual(webhook.payload);
  return webhook.payload!;
}

// A run leaves nothing of its own: what it made under its tag (images, the dangling images of their build stages,
// pods, the compose project) is removed after the last test, passed or failed, and before the first build (what
// a run that was killed left). The base image and layers other tags' images use stay: the next build starts there.
beforeAll(async () => {
  if (mode !== 'off') console.log(`[containers] before building: ${(await removeTestRun(tag)).trim()}`);
}, 600_000);
afterAll(async () => {
  if (mode !== 'off') console.log(`[containers] after the tests: ${(await removeTestRun(tag)).trim()}`);
}, 600_000);

describe.skipIf(mode === 'off')('the images, run as the chart runs them', { timeout: 600_000 }, () => {
  // Building every image from its base (an engine that holds none of their layers yet) takes 5-8 min an image
  // on two cores shared with other work, and there are 7: its bound is an hour.
  beforeAll(async () => {
    const began = Date.now();
    buildLog = await buildImages(tag);
    console.log(
      `[containers] images built (or found cached) in ${((Date.now() - began) / 1000).toFixed(0)} s`,
    );
    for (const line of buildLog.split('\n').filter((l) => / MB \(budget/.test(l))) console.log(line);
    stack = await startContainerStack(tag);
    console.log(
      `[containers] ${Object.entries(stack.timings)
        .map(([what, s]) => `${what} ${s.toFixed(1)} s`)
        .join(', ')}`,
    );
  }, 3_600_000);

  afterAll(async () => {
    await stack?.sandbox.close();
    await stack?.stopAll();
  }, 300_000);

  it('ran every deploy-step Job to success before any service started, and every service passed its startup probe', () => {
    expect(stack.jobs.map((j) => j.release).sort()).toEqual(
      [
        'client-registry',
        'dashboard',
        'gateway',
        'max-sender',
        'telegram-sender',
        'webhook-dispatcher',
      ].filter((n) => stack.jobs.some((j) => j.release === n)),
    );
    expect(stack.jobs.length).toBeGreaterThanOrEqual(6);
    for (const service of stack.services)
      expect(stack.timings[service.release], service.release).toBeDefined();
  });

  it('runs each container as the chart says: uid 1000, read-only root filesystem, only /tmp writable', async () => {
    const env = await podmanEnv();
    for (const spec of stack.services) {
      const name = stack.pod.containerName(spec);
      const probe = `const fs = require('node:fs');
        const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); fs.rmSync(p); return true; } catch { return false; } };
        console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(),
          root: tryWrite('/app/x'), tmp: tryWrite('/tmp/x'), vartmp: tryWrite('/var/tmp/x') }));`;
      const { stdout } = await podman(env, ['exec', name, 'node', '-e', probe]);
      expect(JSON.parse(stdout), spec.release).toEqual({
        uid: 1000,
        gid: 1000,
        root: false,
        tmp: true,
        vartmp: false,
      });
    }
  });

  it('answers every probe as the chart expects, and the image HEALTHCHECK says healthy', async () => {
    for (const spec of stack.services) {
      for (const which of ['startup', 'liveness', 'readiness'] as const) {
        const probe = spec.probes[which];
        expect(probe, `${spec.release} ${which}`).toBeDefined();
        expect(await stack.pod.waitForProbe(spec, which), `${spec.release} ${which}`).toBeLessThan(
          probe!.periodSeconds * probe!.failureThreshold,
        );
      }
      expect(await stack.pod.healthcheck(spec), `${spec.release} HEALTHCHECK`).toBe(true);
    }
  });

  it('images: production dependencies only, uid 1000, a HEALTHCHECK, OCI labels, the pinned Node', async () => {
    const env = await podmanEnv();
    const pinned = (
      JSON.parse(readFileSync(join(repoRoot(), 'package.json'), 'utf8')) as {
        devDependencies: { node: string };
      }
    ).devDependencies.node;
    const revision = (await exec('git', ['rev-parse', 'HEAD'], { cwd: repoRoot() })).stdout.trim();
    const images = [...new Set(stack.services.map((s) => s.image))];
    for (const image of images) {
      const [config] = JSON.parse((await podman(env, ['image', 'inspect', image])).stdout) as {
        // podman answers the health check beside Config (docker inside it).
        Healthcheck?: { Test: string[] };
        Config: { User: string; Healthcheck?: { Test: string[] }; Labels: Record<string, string> };
      }[];
      expect(config!.Config.User, image).toBe('1000:1000');
      const healthcheck = config!.Healthcheck ?? config!.Config.Healthcheck;
      expect(healthcheck?.Test.join(' '), `${image} HEALTHCHECK`).toContain('/healthz');
      const labels = config!.Config.Labels;
      expect(labels['org.opencontainers.image.version'], image).toBe(tag);
      expect(labels['org.opencontainers.image.revision'], image).toMatch(
        new RegExp(`^${revision}(-dirty)?$`),
      );
      expect(labels['org.opencontainers.image.source'], image).toBeTruthy();
      const { stdout } = await podman(env, [
        'run',
        '--rm',
        '--read-only',
        '--entrypoint',
        'node',
        image,
        '-e',
        DEV_DEPENDENCY_CHECK,
      ]);
      const found = JSON.parse(stdout) as { node: string; packages: number; dev: string[]; npm: boolean };
      expect(found.node, image).toBe(`v${pinned}`);
      expect(found.packages, image).toBeGreaterThan(20);
      expect(found.dev, `${image}: devDependencies installed`).toEqual([]);
      expect(found.npm, `${image}: npm left in the runtime image`).toBe(false);
    }
    // The build printed each image's size against its budget.
    expect(buildLog).toMatch(/mds\/gateway:\S+: \d+ MB \(budget \d+ MB\)/);
  });

  describe('through the containerized gateway', () => {
    let company: Awaited<ReturnType<ContainerStack['sandbox']['companyWithWebhooks']>>;
    let bots: Record<'telegram' | 'max', SimulatedBot>;

    beforeAll(async () => {
      const { sandbox } = stack;
      company = await sandbox.companyWithWebhooks('containers');
      bots = {
        telegram: await sandbox.bot(company.companyId, 'telegram', 'containers-telegram'),
        max: await sandbox.bot(company.companyId, 'max', 'containers-max'),
      };
    }, 120_000);

    it('links a person on both messengers, answers client/check, sends with buttons to both, signs every webhook', async () => {
      const { sandbox } = stack;
      const person = await sandbox.person(uniquePhone(), 'Ivan');
      for (const bot of Object.values(bots)) await sandbox.startAndShareContact(person, bot);
      for (const bot of Object.values(bots))
        await sandbox.waitForLink(company.companyId, person.phone, bot, true, WAIT_MS);

      const check = await sandbox.call<{ event_id: string }>(company.apiKey, '/client/check', {
        phone_number: person.phone,
      });
      expect(check.status).toBe(202);
      const checked = expectVerified(
        await company.webhooks.waitFor(check.body.event_id, WAIT_MS),
        company.secrets,
      );
      expect(checked).toMatchObject({ type: 'client.check', phone_number: person.phone, exists: true });
      expect((checked.bots as unknown[]).length).toBe(2);

      const buttons = [{ text: 'Track it', url: 'https://example.com/track' }];
      for (const service of ['telegram', 'max'] as const) {
        const text = `shipped, via ${service}`;
        const eventId = await sandbox.send(company.apiKey, {
          phone_number: person.phone,
          service,
          text,
          buttons,
        });
        const status = expectVerified(await company.webhooks.waitFor(eventId, WAIT_MS), company.secrets);
        expect(status).toMatchObject({ type: 'message.status', event_id: eventId, state: 'sent' });
        const inbox = await sandbox.inbox(person, bots[service]);
        expect(inbox.filter((m) => m.text === text)).toHaveLength(1);
        expect(await sandbox.finishedState(company.apiKey, eventId, WAIT_MS)).toMatchObject({
          state: 'sent',
        });
      }
    });

    it('moves a client to a new number (change_phone), signed webhook and read API agreeing', async () => {
      const { sandbox } = stack;
      const person = await sandbox.linkedPerson(company.companyId, bots.telegram, 'Mover');
      const newPhone = uniquePhone();
      const answer = await sandbox.call<{ event_id: string }>(company.apiKey, '/change_phone', {
        old_phone: person.phone,
        new_phone: newPhone,
      });
      expect(answer.status).toBe(202);
      const changed = expectVerified(
        await company.webhooks.waitFor(answer.body.event_id, WAIT_MS),
        company.secrets,
      );
      expect(changed).toMatchObject({
        type: 'client.phone_changed',
        state: 'changed',
        old_phone: person.phone,
        new_phone: newPhone,
        links_moved: 1,
      });
      expect(await sandbox.finishedState(company.apiKey, answer.body.event_id, WAIT_MS)).toMatchObject({
        kind: 'change_phone',
        state: 'changed',
      });
    });

    it('stops the gateway, the senders and the dispatcher with SIGTERM mid-work within their grace periods, losing nothing', async () => {
      const { sandbox, pod } = stack;
      const person = await sandbox.person(uniquePhone(), 'Steady');
      for (const bot of Object.values(bots)) await sandbox.startAndShareContact(person, bot);
      for (const bot of Object.values(bots))
        await sandbox.waitForLink(company.companyId, person.phone, bot, true, WAIT_MS);
      // Every provider call takes 4 s, so calls are in flight when SIGTERM comes (after the 5 s preStop sleep).
      await sandbox.fault({
        kind: 'latency',
        bot: bots.telegram,
        method: 'sendMessage',
        ms: 4_000,
        count: 100,
      });
      await sandbox.fault({ kind: 'latency', bot: bots.max, method: 'messages', ms: 4_000, count: 100 });
      const accepted: { eventId: string; service: 'telegram' | 'max'; text: string }[] = [];
      let refused = 0;
      let sending = true;
      const load = (async () => {
        for (let i = 0; sending; i += 1) {
          const service = i % 2 === 0 ? 'telegram' : 'max';
          const text = `steady ${i}`;
          try {
            const answer = await sandbox.call<{ event_id: string }>(company.apiKey, '/send', {
              phone_number: person.phone,
              service,
              text,
            });
            if (answer.status === 202) accepted.push({ eventId: answer.body.event_id, service, text });
            else refused += 1;
          } catch {
            refused += 1; // the gateway is stopping or stopped: not accepted, so nothing to deliver
          }
          await new Promise((r) => setTimeout(r, 250));
        }
      })();
      await eventually('a few accepted sends', () => accepted.length >= 6, WAIT_MS);
      const stopping = ['gateway', 'telegram-sender', 'max-sender', 'webhook-dispatcher'].map((n) =>
        stack.service(n),
      );
      const stopped = await Promise.all(stopping.map((spec) => pod.stop(spec)));
      sending = false;
      await load;
      for (const [i, result] of stopped.entries()) {
        const spec = stopping[i]!;
        const logs = await pod.logsOf(spec);
        expect(result.exitCode, `${spec.release} exit code after SIGTERM`).toBe(0);
        expect(result.seconds, `${spec.release} stop time`).toBeLessThan(result.gracePeriodSeconds);
        // Stopped in order, not by its own shutdown timeout giving up on a step (a busy keep-alive connection).
        expect(result.seconds, `${spec.release} stop time`).toBeLessThan(
          Number(spec.preStop?.[1] ?? 0) + Number(spec.env.SHUTDOWN_TIMEOUT_MS) / 1000,
        );
        expect(logs, `${spec.release} logged its orderly stop`).toContain('"msg":"stopped"');
      }
      console.log(
        `[containers] graceful stop: ${stopped.map((s, i) => `${stopping[i]!.release} ${s.seconds.toFixed(1)} s of ${s.gracePeriodSeconds} s`).join(', ')}; ${accepted.length} sends accepted, ${refused} refused while stopping`,
      );
      await sandbox.simulator('DELETE', '/control/faults');
      for (const spec of stopping) await pod.restart(spec);
      for (const spec of stopping) await pod.waitForProbe(spec, 'startup');

      for (const { eventId } of accepted) {
        const webhook = await company.webhooks.waitFor(eventId, WAIT_MS * 2);
        expect(expectVerified(webhook, company.secrets)).toMatchObject({ event_id: eventId, state: 'sent' });
      }
      // Exactly one outcome per accepted send (repeats only with the same webhook-id) and one message each.
      for (const { eventId } of accepted) {
        const ids = new Set(company.webhooks.about(eventId).map((w) => w.headers['webhook-id']));
        expect(ids.size, eventId).toBe(1);
      }
      for (const service of ['telegram', 'max'] as const) {
        const texts = (await sandbox.inbox(person, bots[service])).map((m) => m.text);
        const expected = accepted.filter((a) => a.service === service).map((a) => a.text);
        for (const text of expected)
          expect(
            texts.filter((t) => t === text),
            text,
          ).toHaveLength(1);
      }
    });
  });

  it('stops every container with SIGTERM: exit 0 within its grace period', async () => {
    const order = [...stack.services].reverse();
    for (const spec of order) {
      const result = await stack.pod.stop(spec);
      expect(result.exitCode, `${spec.release} exit code`).toBe(0);
      expect(result.seconds, `${spec.release} stop time`).toBeLessThan(result.gracePeriodSeconds);
    }
  });
});

interface InspectedWebhook {
  type: string;
  event_id: string;
  state: string | null;
  verified: boolean;
  body: Record<string, unknown> | null;
}

describe.skipIf(mode !== 'full')('compose.yaml, run by podman-compose', { timeout: 1_200_000 }, () => {
  let compose: ComposeStack | undefined;

  afterAll(async () => {
    await compose?.down();
  }, 300_000);

  it('brings the whole stack up, and the README quick start passes against it', async () => {
    // The stand-ins build on the images' base (Debian trixie), which changes far less often than an image. The
    // images were built for the tests above (in the full mode both run): built once, not again here.
    const base = /^\[image\] base (\S+)$/m.exec(buildLog || (await buildImages(tag)))?.[1];
    expect(base).toBeTruthy();
    const infra = await buildInfraStandIns(base!);
    const began = Date.now();
    compose = await ComposeStack.up({
      project: composeProject(tag),
      tag,
      kafkaImage: infra.kafka,
      postgresImage: infra.postgres,
    });
    const demo = await compose.waitFor('demo', 240_000);
    expect(demo.exitCode, demo.logs).toBe(0);
    console.log(
      `[containers] compose stack up and demo made in ${((Date.now() - began) / 1000).toFixed(0)} s`,
    );
    const apiKey = /API key (\S+)/.exec(demo.logs)?.[1];
    expect(apiKey, demo.logs).toBeTruthy();

    // The quick start as the README gives it, with this stack's addresses and the demo's key.
    const steps = readmeQuickStart().split('\n');
    expect(steps[0]).toMatch(
      /^S=\S+ G=\S+ J='Content-Type: application\/json' K='X-API-Key: <demo API key>'$/,
    );
    const S = `http://127.0.0.1:${compose.ports.simulator}`;
    steps[0] = `S=${S} G=http://127.0.0.1:${compose.ports.gateway} J='Content-Type: application/json' K='X-API-Key: ${apiKey}'`;
    // The demo printed the same walk-through, bots included.
    expect(demo.logs).toContain('for bot in 7000000001 30000001; do');
    // Step by step, as a person pastes them: the registry links the person (its senders read the bots' updates
    // every 2 s) before the check and the sends.
    const companyId = /Demo company (\S+),/.exec(demo.logs)?.[1];
    const step2 = steps.findIndex((line) => line.startsWith('# 2.'));
    let output = await compose.shell(steps.slice(0, step2).join('\n'));
    await eventually(
      'the demo person linked to both bots',
      async () => {
        const answer = await fetch(
          `http://127.0.0.1:${compose!.ports.registry}/admin/v1/companies/${companyId}/clients/79123456789`,
          { headers: { authorization: 'Bearer compose-admin-token' } },
        );
        const client = (await answer.json()) as { links?: { reachable: boolean }[] };
        return (client.links ?? []).filter((l) => l.reachable).length === 2;
      },
      WAIT_MS,
    );
    output += await compose.shell([steps[0], ...steps.slice(step2)].join('\n'));
    expect(output.match(/"status":"accepted"/g), output).toHaveLength(3);

    const webhooks = await eventually(
      'the quick start webhooks in the inspector',
      async () => {
        const answer = (await (await fetch(`${S}/control/inspector/demo/webhooks`)).json()) as
          InspectedWebhook[] | { webhooks: InspectedWebhook[] };
        const list = Array.isArray(answer) ? answer : answer.webhooks;
        const sent = list.filter((w) => w.type === 'message.status' && w.state === 'sent');
        const checked = list.filter((w) => w.type === 'client.check');
        return sent.length >= 2 && checked.length >= 1 ? list : undefined;
      },
      WAIT_MS * 2,
    );
    expect(webhooks.every((w) => w.verified)).toBe(true);
    expect(webhooks.find((w) => w.type === 'client.check')?.body).toMatchObject({ exists: true });
  });
});

/**
 * Run inside an image, in the service's folder: its Node, and every installed package that the service's
 * production dependencies (followed as Node resolves them) do not reach, i.e. what only development needs.
 */
const DEV_DEPENDENCY_CHECK = `
const fs = require('node:fs');
const path = require('node:path');
const reached = new Set();
function resolve(name, from) {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return fs.realpathSync(candidate);
    if (dir === '/') return undefined;
  }
}
function visit(dir) {
  if (reached.has(dir)) return;
  reached.add(dir);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const name of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies })) {
    const found = resolve(name, dir);
    if (found) visit(found);
  }
}
visit(process.cwd());
const installed = new Set();
function walk(dir) {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir)) {
    if (entry.startsWith('.')) continue;
    const full = path.join(dir, entry);
    if (entry.startsWith('@')) { walk(full); continue; }
    if (!fs.existsSync(path.join(full, 'package.json'))) continue;
    installed.add(fs.realpathSync(full));
    walk(path.join(full, 'node_modules'));
  }
}
walk('/app/node_modules');
for (const dir of [...installed]) walk(path.join(dir, 'node_modules'));
const dev = [...installed].filter((dir) => !reached.has(dir)).map((dir) => path.relative('/app', dir)).sort();
console.log(JSON.stringify({ node: process.version, packages: installed.size, dev, npm: fs.existsSync('/usr/local/bin/npm') }));
`;
