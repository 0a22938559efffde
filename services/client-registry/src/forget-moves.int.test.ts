// Forgetting a person who changed number (docs/personal-data.md): whichever number the operator gives, every
// number change_phone moved them from or to is forgotten, and a rebuild of the registry restores none of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topics, type ClientEvent, type ClientRequestEvent } from '@mds/contracts';
import { openDatabase, type Knex } from '@mds/db';
import { uniqueName } from '@mds/local-infra/testing';
import { registryPersonKeys } from '@mds/personal-data';
import { SCHEMA } from './adapters/db/migrations.js';
import { mdsAdmin } from '../test/mds-admin.js';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  admin,
  rebuildFromLog,
  botUpdate,
  chatOf,
  collect,
  createCompany,
  eventually,
  publishBotUpdates,
  registerBot,
  request,
  startRegistryStack,
  type RegistryStack,
} from '../test/support.js';

let stack: RegistryStack;
let keys: ReturnType<typeof registryPersonKeys>;
let clientEvents: Awaited<ReturnType<typeof collect<ClientEvent>>>;
let outcomes: Awaited<ReturnType<typeof collect<ClientRequestEvent>>>;
let db: Knex;

beforeAll(async () => {
  stack = await startRegistryStack();
  keys = registryPersonKeys({ address: stack.grpc, token: INTERNAL_TOKEN });
  [clientEvents, outcomes] = await Promise.all([
    collect(stack, topics.client),
    collect(stack, topics.clientRequest),
  ]);
  db = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA });
});

afterAll(async () => {
  keys?.close();
  await Promise.all([clientEvents, outcomes].map((c) => c?.stop()));
  await db?.destroy();
  await stack?.stop();
});

const A = '79123460001';
const B = '79123460002';
const C = '79123460003';
const STRANGER = '79123460009';

interface ForgetAnswer {
  subject_id: string;
  subject_ids: string[];
  numbers_forgotten: number;
  keys_destroyed: number;
  links_removed: number;
}

/** People share their contact with the bot: number by chat id. */
const shareContacts = (companyId: string, botId: string, numbers: Record<string, string>) =>
  publishBotUpdates(
    stack,
    Object.entries(numbers).map(([chatId, phoneNumber]) =>
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat: chatOf(botId, chatId), providerUpdateId: chatId, phoneNumber },
      }),
    ),
  );

/** Rebuilds the registry from the log into a fresh schema: the company's links and moves there. */
async function rebuiltOf(companyId: string) {
  const schema = uniqueName('registry_forget_rebuilt');
  await rebuildFromLog(stack, schema);
  const [links, moves] = await Promise.all([
    db.withSchema(schema).from('client_links').where({ company_id: companyId }).orderBy('chat_id'),
    db.withSchema(schema).from('person_moves').where({ company_id: companyId }),
  ]);
  return {
    links: (links as { phone: string; chat_id: string }[]).map((l) => `${l.chat_id}:${l.phone}`),
    moves: moves.length,
  };
}

describe('forgetting a person who changed number', () => {
  it('forgets every number of the chain from any one of them: keys, links, moves; once per subject; and a rebuild restores nothing', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    // Someone else of the same company (chat 6009) must keep everything.
    await shareContacts(companyId, botId, { '6001': A, '6009': STRANGER });
    await eventually(
      'two links',
      () => clientEvents.events.filter((e) => e.metadata.companyId === companyId).length === 2 || undefined,
    );
    const change = async (oldPhone: string, newPhone: string) => {
      const requestId = await request(stack, companyId, {
        $case: 'phoneChangeRequested',
        value: { oldPhone, newPhone, apiKeyId: 'k', idempotencyKey: '' },
      });
      const outcome = await eventually('change_phone outcome', () =>
        outcomes.events.find(
          (e) => e.metadata.streamId === requestId && e.event.$case !== 'phoneChangeRequested',
        ),
      );
      expect(outcome.event.$case).toBe('phoneChanged');
    };
    // A -> B -> C; then the person shares A again on another chat (A is theirs again, the same subject).
    await change(A, B);
    await change(B, C);
    await shareContacts(companyId, botId, { '6002': A });
    await eventually(
      'the link of A again',
      async () =>
        (await db('client_links').where({ company_id: companyId, chat_id: '6002' })).length === 1 ||
        undefined,
    );
    const [a, b, c, stranger] = await Promise.all([A, B, C, STRANGER].map((p) => keys.obtain(companyId, p)));
    // Before the forget, a rebuild equals the live state: the moves are a fact of the log.
    expect(await rebuiltOf(companyId)).toEqual({
      links: [`6001:${C}`, `6002:${A}`, `6009:${STRANGER}`],
      moves: 2,
    });

    // The operator gives the middle number, which holds no link of its own, to mds-admin as a person runs it.
    const run = await mdsAdmin(['clients', 'forget', companyId, B], {
      env: { REGISTRY_URL: stack.url, REGISTRY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout.split('\n')[0]).toBe(
      `forgot ${B} and 2 other number(s) they moved from or to: their keys are destroyed and every service deletes what it holds of them`,
    );
    expect(run.stdout).toMatch(new RegExp(`^subject_id +${b!.subjectId}$`, 'm'));
    expect(run.stdout).toMatch(/^numbers_forgotten +3$/m);
    expect(run.stdout).toMatch(/^keys_destroyed +3$/m);
    expect(run.stdout).toMatch(/^links_removed +2$/m);
    const subjectIds = /^subject_ids +(.+)$/m.exec(run.stdout)![1]!.split(', ');
    expect(subjectIds[0]).toBe(b!.subjectId);
    expect([...subjectIds].sort()).toEqual([a!.subjectId, b!.subjectId, c!.subjectId].sort());
    // No number but the one given.
    expect(run.stdout).not.toContain(A);
    expect(run.stdout).not.toContain(C);

    for (const person of [a!, b!, c!]) expect(await keys.get(companyId, person.keyId)).toBe('erased');
    expect(await keys.get(companyId, stranger!.keyId)).toEqual(stranger);
    expect(
      (await db('client_links').where({ company_id: companyId })).map((l: { phone: string }) => l.phone),
    ).toEqual([STRANGER]);
    expect(await db('person_moves').where({ company_id: companyId })).toEqual([]);
    for (const phone of [A, B, C])
      expect((await admin(stack, 'GET', `/companies/${companyId}/clients/${phone}`)).body).toMatchObject({
        exists: false,
        links: [],
      });
    // One ClientForgotten per number, so every service blanks what it holds under each.
    const announced = await eventually('three ClientForgotten', () => {
      const found = clientEvents.events.filter(
        (e) => e.metadata.companyId === companyId && e.event.$case === 'clientForgotten',
      );
      return found.length === 3 ? found : undefined;
    });
    expect(announced.map((e) => (e.event.value as { subjectId: string }).subjectId).sort()).toEqual(
      [a!.subjectId, b!.subjectId, c!.subjectId].sort(),
    );

    // Rebuilt from the log, the registry has none of the person's links or moves: their events read as erased.
    expect(await rebuiltOf(companyId)).toEqual({ links: [`6009:${STRANGER}`], moves: 0 });

    // Forgetting again (by any number) is fine: nothing is left of them, and it is said again.
    const again = await admin<ForgetAnswer>(stack, 'POST', `/companies/${companyId}/clients/${A}/forget`);
    expect(again.body).toMatchObject({ numbers_forgotten: 1, keys_destroyed: 0, links_removed: 0 });
  });

  it('forgets only the given number of someone who never moved', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    await shareContacts(companyId, botId, { '6101': A, '6102': B });
    await eventually(
      'two links',
      async () => (await db('client_links').where({ company_id: companyId })).length === 2 || undefined,
    );
    const forgotten = await admin<ForgetAnswer>(stack, 'POST', `/companies/${companyId}/clients/${A}/forget`);
    expect(forgotten.body).toMatchObject({ numbers_forgotten: 1, keys_destroyed: 1, links_removed: 1 });
    expect(
      (await db('client_links').where({ company_id: companyId })).map((l: { phone: string }) => l.phone),
    ).toEqual([B]);
  });
});
