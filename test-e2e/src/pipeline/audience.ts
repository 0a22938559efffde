// The audience of a pipeline run: companies, each with a Telegram bot in the simulator and a webhook at the
// run's receiver, and people who started every bot and shared their contact through the real update path
// (simulator -> sender -> registry), so that every send is routed and delivered for real.
import { topics } from '@mds/contracts';
import { collectEvents } from '@mds/kafka/testing';
import type { Stack } from '../harness.js';
import type { DemoCompany, Sandbox, SimulatedBot, SimulatedPerson } from '../sandbox.js';
import type { BenchReceiver, Target } from './load.js';

export async function inParallel<T, R>(items: T[], limit: number, work: (item: T, i: number) => Promise<R>) {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!, i);
      }
    }),
  );
  return results;
}

/**
 * `companies` companies and `people` people linked to every company's bot; resolves once the registry has
 * every link. Answers the companies and the send targets, in company-major order over people: consecutive sends go to
 * different bots, and one chat (bot, person) gets rate / (companies x people) sends per second.
 */
export async function createAudience(o: {
  stack: Stack;
  sandbox: Sandbox;
  receiver: BenchReceiver;
  companies: number;
  people: number;
  /** The numbers' first digits after the country code (runs on one stack use different ones). */
  phonePrefix?: string;
  linkTimeoutMs?: number;
}): Promise<{ targets: Target[]; companies: (DemoCompany & { bot: SimulatedBot })[] }> {
  const { stack, sandbox, receiver } = o;
  const brokers = stack.infra.kafkaBrokers.split(',');
  const links = await collectEvents({ brokers, topic: topics.client, topicPrefix: stack.topicPrefix });
  try {
    const companies = await inParallel(
      Array.from({ length: o.companies }, (_, i) => i),
      8,
      async (i) => {
        const company = await sandbox.company(`Pipeline ${i}`, `${receiver.url}/c/${i}`);
        receiver.secretsOf(i, company.secrets[0]!);
        const bot = await sandbox.bot(company.companyId, 'telegram', `pipeline${i}`);
        return { ...company, bot };
      },
    );
    const prefix = o.phonePrefix ?? '7916';
    const phones = Array.from(
      { length: o.people },
      (_, i) => `${prefix}${String(3_000_000 + i).padStart(11 - prefix.length, '0')}`,
    );
    const people: SimulatedPerson[] = await inParallel(phones, 8, (phone, i) =>
      sandbox.person(phone, `Person${i}`),
    );
    const pairs = companies.flatMap((c) => people.map((p) => ({ bot: c.bot, person: p })));
    await inParallel(pairs, 16, ({ bot, person }) => sandbox.startAndShareContact(person, bot));
    const timeoutMs = o.linkTimeoutMs ?? 120_000;
    const linkedBy = performance.now() + timeoutMs;
    const linked = () => links.events.filter((e) => e.event.$case === 'clientLinked').length;
    while (linked() < pairs.length) {
      if (performance.now() > linkedBy)
        throw new Error(`only ${linked()} of ${pairs.length} people linked after ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    return {
      targets: phones.flatMap((phone) => companies.map((c) => ({ apiKey: c.apiKey, phone }))),
      companies,
    };
  } finally {
    await links.stop();
  }
}
