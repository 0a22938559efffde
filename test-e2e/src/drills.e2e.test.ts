import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, restartKafka, restartPostgres, startInfra, type Infra } from '@mds/local-infra';
import { uniqueName } from '@mds/local-infra/testing';
import {
  allReady,
  checkOutcomes,
  DELIVERY_SERVICES,
  DRILL_GATEWAY_ENV,
  describeFindings,
  drillPeople,
  faults,
  keepInfraLogs,
  OWN_INFRA_ENV,
  SteadyLoad,
} from './drill-kit.js';
import { Stack } from './harness.js';
import { deliveryServices, Sandbox, WebhookReceiver, type Messenger, type SimulatedBot } from './sandbox.js';

// Failure drills: the whole delivery service as real processes on a broker and a PostgreSQL of its own
// (the drill stops them, so it cannot share the run's), under a steady stream of sends by a client that
// retries like a real one. In turn: SIGKILL and restart of every service, a broker restart, a database
// restart. Afterwards every accepted message has exactly one outcome, the read API agrees, its webhook
// came (repeats only with the same webhook-id and state), and nobody received a message twice.

const RATE_PER_SECOND = 25;
const MAX_SENDS = 4_000;
const PEOPLE = 12;
const MAX_IN_FLIGHT = 200;
const LOAD_BETWEEN_DRILLS_MS = 4_000;
/** How long a send is retried (same Idempotency-Key) before the client gives up on it. */
const SEND_PATIENCE_MS = 120_000;

const infraName = uniqueName('drill');
const infraEnv = OWN_INFRA_ENV;
let infra: Infra | undefined;
let stack: Stack | undefined;
let sandbox: Sandbox;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  infra = await startInfra({ name: infraName, ephemeral: true, env: infraEnv });
  await receiver.start();
  const adminToken = `e2e-admin-${randomBytes(12).toString('hex')}`;
  const grpcPort = await freePort();
  stack = await Stack.start({
    infra,
    env: { INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
    services: deliveryServices({
      grpcPort,
      adminToken,
      env: { gateway: DRILL_GATEWAY_ENV },
    }),
  });
  sandbox = new Sandbox(stack, adminToken);
}, 240_000);

afterAll(async () => {
  await receiver.close();
  await stack?.stop();
  // The drill's broker and database logs go with the services' (the run folder is removed on stop).
  if (stack) keepInfraLogs(infraName, stack.artifacts);
  await infra?.stop();
}, 60_000);

it(
  'every accepted message has one outcome and its webhook through crashes of every service, a broker restart and a database restart',
  { timeout: 600_000 },
  async () => {
    const s = stack!;
    const company = await sandbox.company('Drills', receiver.url);
    receiver.verifyWith(company.secrets);
    const bots: Record<Messenger, SimulatedBot> = {
      telegram: await sandbox.bot(company.companyId, 'telegram', 'drill_tg'),
      max: await sandbox.bot(company.companyId, 'max', 'drill_max'),
    };
    const people = await drillPeople(sandbox, company, bots, PEOPLE);

    // The load: RATE_PER_SECOND sends a second until the drills are over.
    const load = new SteadyLoad({
      sandbox,
      company,
      people,
      rate: RATE_PER_SECOND,
      maxSends: MAX_SENDS,
      maxInFlight: MAX_IN_FLIGHT,
      patienceMs: SEND_PATIENCE_MS,
    });
    load.start();

    const exits: string[] = [];
    const drills: [string, () => Promise<void>][] = [
      ...DELIVERY_SERVICES.map((name): [string, () => Promise<void>] => [
        `kill -9 ${name}`,
        () => s.service(name).restart('SIGKILL'),
      ]),
      ['Kafka broker restart', () => restartKafka(infraName, infraEnv)],
      ['PostgreSQL restart', () => restartPostgres(infraName, infraEnv)],
    ];
    const timings: string[] = [];
    await sleep(LOAD_BETWEEN_DRILLS_MS);
    for (const [what, drill] of drills) {
      const t0 = Date.now();
      await drill();
      await allReady(s, what, exits);
      timings.push(`${what}: ready again in ${Date.now() - t0} ms`);
      console.log(
        `[drills] ${timings.at(-1)!} (sends so far ${load.sends.length}, waiting for an answer ${load.waiting})`,
      );
      await sleep(LOAD_BETWEEN_DRILLS_MS);
    }
    await load.stop();

    const sends = load.sends;
    const accepted = sends.filter((x) => x.eventId !== undefined);
    const findings = await checkOutcomes({ stack: s, sandbox, company, receiver, people, bots, sends });
    const gaveUp = sends.filter((x) => x.gaveUp);
    console.log(
      [
        `[drills] ${timings.join('; ')}`,
        ...exits.map((e) => `[drills] ${e}`),
        ...gaveUp.slice(0, 5).map((x) => `[drills] send #${x.i} given up: ${x.gaveUp}`),
        ...findings.problems.map((p) => `[drills] ${p}`),
        `[drills] sends ${sends.length} (retried ${sends.filter((x) => x.attempts > 1).length}, given up ${gaveUp.length}), ${describeFindings(findings)}`,
      ].join('\n'),
    );
    expect(accepted.length).toBeGreaterThan(0);
    expect(new Set(accepted.map((x) => x.eventId)).size).toBe(accepted.length);
    expect({ ...faults(findings), exits }).toEqual({
      ...Object.fromEntries(Object.keys(faults(findings)).map((k) => [k, 0])),
      exits: [],
    });
  },
);
