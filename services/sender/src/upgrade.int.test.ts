// The upgrade from the two sender services (telegram-sender, max-sender) to the one sender deployed per
// messenger: a running installation's schema, migrations, consumer group and topic are taken over in place.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryTopic, messengerNamed, topics, type Complete, type MessageEvent } from '@mds/contracts';
import { openDatabase, type Knex } from '@mds/db';
import { createKafkaClient, topicName } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { eventually } from '@mds/local-infra/testing';
import { loadConfig } from '@mds/config';
import { runDeployStep, type DeployStepConfig } from '@mds/service-kit/platform';
import { deployStepConfigSchema } from './config.js';
import { journalMigrations } from './adapters/journal/journal.js';
import { senderDeployment } from './deployment.js';
import {
  deliveryRequest,
  outcomesOf,
  publishDeliveries,
  runSender,
  startSenderStack,
  type Person,
  type SenderStack,
  type SimBot,
} from './test-support/stack.js';

/**
 * What today's telegram-sender is called wherever it left something, spelled as it spells it (its provision.ts
 * and deploy step, its consumer group): the upgrade must find each of them under exactly these names.
 */
const TODAY = {
  service: 'telegram-sender',
  schema: 'telegram_sender',
  group: 'telegram-sender',
  topic: 'mds.delivery.telegram.v1',
  migrations: ['0001_deliveries', '0002_spilled', '0003_scheduled', '0000_dead_letters'],
};

const logger = createLogger({ service: 'upgrade-test', level: 'silent' });
let stack: SenderStack;
let bot: SimBot;
let person: Person;
let db: Knex;
let outcomes: { events: Complete<MessageEvent>[]; stop: () => Promise<void> };

const deployConfig = (): DeployStepConfig =>
  loadConfig(deployStepConfigSchema, { ...stack.senderEnv, MESSENGER: 'telegram' });

const inbox = async () =>
  (
    await stack.control<{ messages: { text: string }[] }>(
      'GET',
      `/people/${person.id}/messages?bot_id=${bot.simId}`,
    )
  ).messages.map((m) => m.text);

const send = async (text: string) => {
  const chat = {
    messenger: 1 as const,
    botId: bot.botId,
    chatId: String(person.telegramUserId),
    userId: String(person.telegramUserId),
  };
  const [messageId] = await publishDeliveries(stack, deliveryTopic('telegram'), [
    deliveryRequest(stack.companyId, chat, { text }),
  ]);
  return messageId!;
};

const sentOnce = (messageId: string) =>
  eventually(`the outcome of ${messageId}`, () => {
    const found = outcomesOf(outcomes.events, [messageId]);
    return found.length > 0 ? found : undefined;
  });

async function groupOffsets(): Promise<{ partition: number; offset: string }[]> {
  const admin = createKafkaClient(
    { brokers: stack.senderEnv.KAFKA_BROKERS!.split(','), clientId: 'upgrade' },
    logger,
  ).admin();
  await admin.connect();
  try {
    const [offsets] = await admin.fetchOffsets({
      groupId: `${stack.topicPrefix}${TODAY.group}`,
      topics: [`${stack.topicPrefix}${TODAY.topic}`],
    });
    return offsets!.partitions.filter((p) => p.offset !== '-1');
  } finally {
    await admin.disconnect();
  }
}

/** As a crash between the call and the offset commit leaves it: the group's offset moved back by one. */
async function rewindOne(partition: number, offset: string): Promise<void> {
  const admin = createKafkaClient(
    { brokers: stack.senderEnv.KAFKA_BROKERS!.split(','), clientId: 'upgrade' },
    logger,
  ).admin();
  await admin.connect();
  try {
    await admin.setOffsets({
      groupId: `${stack.topicPrefix}${TODAY.group}`,
      topic: `${stack.topicPrefix}${TODAY.topic}`,
      partitions: [{ partition, offset: String(BigInt(offset) - 1n) }],
    });
  } finally {
    await admin.disconnect();
  }
}

const migrationRows = () =>
  db('knex_migrations').withSchema(TODAY.schema).orderBy('id').select('id', 'name', 'migration_time');

beforeAll(async () => {
  stack = await startSenderStack();
  outcomes = await stack.collect(topics.message);
  bot = await stack.createBot('telegram', 'upgraded');
  person = await stack.createPerson();
  await stack.control('POST', `/people/${person.id}/actions`, { action: 'start', bot_id: bot.simId });
  db = await openDatabase({ url: stack.senderEnv.DATABASE_URL!, schema: TODAY.schema });
}, 120_000);

afterAll(async () => {
  await db?.destroy();
  await outcomes?.stop();
  await stack?.stop();
});

describe('upgrading telegram-sender to the one sender (MESSENGER=telegram)', () => {
  it('takes over its schema, migrations, consumer group and journal in place: nothing re-run, skipped or sent twice', async () => {
    // 1. What today's telegram-sender leaves. Its deploy step, as its provision.ts declared it.
    const today = await runDeployStep(
      {
        service: TODAY.service,
        schema: TODAY.schema,
        migrations: journalMigrations,
        topics: [deliveryTopic('telegram'), topics.message, topics.botUpdate],
      },
      deployConfig(),
      logger,
    );
    expect(today.migrations.sort()).toEqual([...TODAY.migrations].sort());
    const migrated = await migrationRows();

    // It sent `old` (long ago: the journal's retention has removed its row since) and `sent` (its offset not yet
    // committed when it stopped, as a crash leaves it). Sent here by a sender under today's names.
    const before = await runSender('telegram', { ...stack.senderEnv, UPDATES_MODE: 'off' });
    const old = await send('old');
    const sent = await send('sent');
    await sentOnce(old);
    await sentOnce(sent);
    await before.stop();
    await db('deliveries').withSchema(TODAY.schema).where('message_id', old).delete();
    const [committed] = await groupOffsets();
    await rewindOne(committed!.partition, committed!.offset);
    expect(await inbox()).toEqual(['old', 'sent']);

    // 2. The upgrade: the chart's pre-upgrade deploy step of the new release, then the new pods.
    const definition = messengerNamed('telegram')!;
    expect(definition.sender).toBe(TODAY.service);
    expect(topicName(deliveryTopic('telegram'), '')).toBe(TODAY.topic);
    const upgrade = await runDeployStep(senderDeployment(definition), deployConfig(), logger);
    expect(upgrade.migrations).toEqual([]);
    const after = await runSender('telegram', { ...stack.senderEnv, UPDATES_MODE: 'off' });
    try {
      const next = await send('after the upgrade');
      await sentOnce(next);
      // `sent` came again from the log (its offset was not committed) and was recognised; `old`, before the
      // committed offset, was never read again (no row would have stopped it).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await inbox()).toEqual(['old', 'sent', 'after the upgrade']);
      expect(outcomesOf(outcomes.events, [old])).toHaveLength(1);
      expect(outcomesOf(outcomes.events, [next])[0]!.metadata.producer).toBe(TODAY.service);
    } finally {
      await after.stop();
    }
    expect(await migrationRows()).toEqual(migrated);
    const [resumed] = await groupOffsets();
    expect(BigInt(resumed!.offset)).toBe(BigInt(committed!.offset) + 1n);
  }, 120_000);
});
