// What the codecs' last line of defence costs: `encode` looks at every string field of a record for characters
// no text may hold (@mds/text) before protobuf writes it. CPU per encode of a MessageAccepted (a text of 300
// characters, two buttons) and of a WebhookAttempted, with the codec and with protobuf's encoder alone, side by
// side in alternating rounds; and the decode of the same bytes, for scale.
import { randomUUID } from 'node:crypto';
import { newEvent, topics, type MessageEvent, type WebhookEvent } from '../src/index.js';
import { MessageEvent as MessageEventProto } from '../src/gen/mds/events/v1/message.js';
import { WebhookEvent as WebhookEventProto } from '../src/gen/mds/events/v1/webhook.js';

const PER_ROUND = 50_000;
const ROUNDS = 7;

const accepted = newEvent<MessageEvent>({
  eventId: randomUUID(),
  occurredAt: new Date(),
  companyId: randomUUID(),
  streamId: randomUUID(),
  producer: 'gateway',
  event: {
    $case: 'messageAccepted',
    value: {
      phoneNumber: 'sealed:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      text: 'Ваш заказ отправлен. '.repeat(14),
      messenger: 1,
      botName: 'shop_bot',
      buttons: [
        { text: 'Track it', url: 'https://example.com/track/123' },
        { text: 'Отменить', url: 'https://example.com/cancel/123' },
      ],
      apiKeyId: 'key_0123456789',
      idempotencyKey: randomUUID(),
    },
  },
});
const attempted = newEvent<WebhookEvent>({
  eventId: randomUUID(),
  occurredAt: new Date(),
  companyId: randomUUID(),
  streamId: `msg_${'0'.repeat(32)}`,
  producer: 'webhook-dispatcher',
  event: {
    $case: 'webhookAttempted',
    value: {
      kind: 'message.status',
      subjectId: randomUUID(),
      attempt: 1,
      url: 'https://hooks.example.com/mds',
      statusCode: 200,
      latencyMs: 12,
      outcome: 1,
      error: '',
      responseExcerpt: '',
    },
  },
} as never);

function cpuMicrosPerCall(work: () => unknown): number {
  const began = process.cpuUsage();
  for (let i = 0; i < PER_ROUND; i++) work();
  const used = process.cpuUsage(began);
  return (used.user + used.system) / PER_ROUND;
}

const cases: [string, () => unknown][] = [
  ['MessageAccepted: codec encode (cleaning)', () => topics.message.codec.encode(accepted)],
  ['MessageAccepted: protobuf encode alone  ', () => MessageEventProto.encode(accepted).finish()],
  ['WebhookAttempted: codec encode (cleaning)', () => topics.webhook.codec.encode(attempted)],
  ['WebhookAttempted: protobuf encode alone  ', () => WebhookEventProto.encode(attempted).finish()],
];
const acceptedBytes = topics.message.codec.encode(accepted);
cases.push(['MessageAccepted: codec decode           ', () => topics.message.codec.decode(acceptedBytes)]);

for (const [, work] of cases) cpuMicrosPerCall(work); // warm-up
const samples = cases.map(() => [] as number[]);
for (let round = 0; round < ROUNDS; round++)
  cases.forEach(([, work], i) => samples[i]!.push(cpuMicrosPerCall(work)));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`CPU per call, µs (median, best and worst of ${ROUNDS} rounds of ${PER_ROUND})`);
cases.forEach(([name], i) => {
  const xs = samples[i]!;
  console.log(
    `${name}  ${median(xs).toFixed(2)}  (${Math.min(...xs).toFixed(2)} - ${Math.max(...xs).toFixed(2)})`,
  );
});
const ratio = (a: number, b: number) => (median(samples[a]!) / median(samples[b]!)).toFixed(2);
console.log(`codec / protobuf alone: MessageAccepted ${ratio(0, 1)}x, WebhookAttempted ${ratio(2, 3)}x`);
