import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import {
  startDeliveryStack,
  type DemoCompany,
  type Sandbox,
  type SimulatedBot,
  type SimulatedPerson,
} from './sandbox.js';

// The sandbox of `npm start` across restarts: the whole delivery service as real processes, with the
// simulator keeping its world in a state file in a run directory, as `npm start` runs it (STATE_FILE in
// .run/dev). Here rather than by driving `npm start` itself: that binds fixed ports (8080-8090, 50051)
// that a developer's own `npm start` holds, and starts a broker and database of its own instead of the
// run's shared ones. What `npm start` adds around the services (the demo company) is not what is tested.

const WAIT_MS = 60_000;

let runDir: string;
let stack: Stack;
let sandbox: Sandbox;

beforeAll(async () => {
  runDir = mkdtempSync(join(tmpdir(), 'mds-sandbox-'));
  ({ stack, sandbox } = await startDeliveryStack({
    env: { 'messenger-simulator': { STATE_FILE: join(runDir, 'messenger-simulator.sqlite') } },
  }));
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
  rmSync(runDir, { recursive: true, force: true });
});

interface Inspected {
  event_id: string | null;
  type: string | null;
  state: string | null;
  verified: boolean;
}

/** What the simulator's webhook inspector shows for the name, newest first. */
async function inspected(): Promise<Inspected[]> {
  return (await sandbox.simulator<{ webhooks: Inspected[] }>('GET', '/control/inspector/sandbox/webhooks'))
    .webhooks;
}

/** Sends through the company's default Telegram bot; answers once sent and seen, verified, by the inspector. */
async function sendAndSee(company: DemoCompany, person: SimulatedPerson, text: string): Promise<string> {
  const eventId = await sandbox.send(company.apiKey, {
    phone_number: person.phone,
    service: 'telegram',
    text,
  });
  expect(await sandbox.finishedState(company.apiKey, eventId, WAIT_MS)).toMatchObject({ state: 'sent' });
  await eventually(
    `the inspector shows the webhook of ${eventId}, verified`,
    async () => (await inspected()).find((w) => w.event_id === eventId && w.verified),
    WAIT_MS,
  );
  return eventId;
}

describe('the sandbox across restarts', () => {
  it('keeps the simulated world through a Ctrl-C of everything and a kill -9 of the simulator', async () => {
    const simulator = stack.service('messenger-simulator');
    const company = await sandbox.company('Sandbox', `${simulator.url}/inspector/sandbox/hooks`);
    await sandbox.simulator('PUT', '/control/inspector/sandbox', { secrets: company.secrets });
    const bot = await sandbox.bot(company.companyId, 'telegram', 'shop');
    const ivan = await sandbox.linkedPerson(company.companyId, bot, 'Ivan');
    const sent = [await sendAndSee(company, ivan, 'before any restart')];
    const texts = ['before any restart'];

    const restarts: [string, () => Promise<void>][] = [
      // A terminal's Ctrl-C reaches npm start and every process it started.
      ['Ctrl-C', () => stack.restart('SIGINT')],
      ['kill -9 of the simulator', () => simulator.restart('SIGKILL')],
    ];
    for (const [name, restart] of restarts) {
      await restart();
      // The inspector still shows the earlier deliveries.
      expect((await inspected()).map((w) => w.event_id)).toEqual(expect.arrayContaining(sent));
      // The same bot still sends to the same person, who has every message.
      texts.push(`after the ${name}`);
      sent.push(await sendAndSee(company, ivan, `after the ${name}`));
      expect((await sandbox.inbox(ivan, bot)).map((m) => m.text)).toEqual(texts);
      // A bot made now is new to the registry: it registers without a conflict, and its company sends.
      const newcomer = await sandbox.company(`Newcomer after the ${name}`);
      const newBot: SimulatedBot = await sandbox.bot(newcomer.companyId, 'telegram', 'newcomer');
      expect(newBot.simulatorId).not.toBe(bot.simulatorId);
      const olga = await sandbox.linkedPerson(newcomer.companyId, newBot, 'Olga');
      const eventId = await sandbox.send(newcomer.apiKey, {
        phone_number: olga.phone,
        service: 'telegram',
        text: 'welcome',
      });
      expect(await sandbox.finishedState(newcomer.apiKey, eventId, WAIT_MS)).toMatchObject({ state: 'sent' });
    }
  }, 400_000);
});
