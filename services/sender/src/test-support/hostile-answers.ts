// A messenger saying what no client should trust, acted out against the messenger simulator: error answers
// holding NUL, controls, lone surrogates, bytes that are no UTF-8, a megabyte, or no JSON at all (its
// `hostile-error` fault), and a person whose name and shared contacts hold the same. The tests of both senders
// check that every event they emit carries only clean, bounded text, that none needed the event codec's last
// line of defence, that their logs stay bounded, and that messages still go out afterwards.
import type { Logger } from '@mds/logging';
import {
  isCleanText,
  onUncleanText,
  topics,
  type Complete,
  type MessageEvent,
  type StreamRecord,
  type UncleanText,
  deliveryTopic,
} from '@mds/contracts';
import { eventually } from '@mds/local-infra/testing';
import { capturingLogger } from './failure-paths.js';
import {
  deliveryRequest,
  outcomesOf,
  publishDeliveries,
  chatOfStart,
  startSenderStack,
  type ActionAnswer,
  type BuiltInMessengerName,
} from './stack.js';

export interface HostileAnswersOptions {
  messenger: BuiltInMessengerName;
  /** Runs the sender under test with this environment, logging to `logger`. */
  start(env: Record<string, string>, logger: Logger): Promise<{ url: string; stop: () => Promise<void> }>;
}

export interface HostileAnswersResult {
  /** What each hostile answer to a send came to: the outcome event's case, code and description. */
  outcomes: { answer: string; outcome: string; code: string; description: string }[];
  /** Every string field of the events the sender emitted that holds a character no text may hold. */
  unclean: string[];
  /** Fields the event codec had to clean: a producer that let outside text through uncleaned. */
  codecCleaned: UncleanText[];
  /** The length of the longest line the sender logged (kafkajs' own debug lines of broker metadata aside), and its first 300 characters. */
  longestLogLine: number;
  longestLogLineStart: string;
  /** Whether the person of the hostile name shared their own contact and the registry linked them. */
  linked: boolean;
  /** The outcome of a plain message to that person after all of it. */
  lastOutcome: string;
}

/** NUL, BEL, ESC, a C1 control, a lone surrogate, a non-character and a line break that starts a vCard line. */
export const HOSTILE_NAME = 'Iv\u0000an \u0007\u001b[31m \u0085 \ud800 \ufffe\r\nTEL:70000000000';

const METHODS = {
  telegram: { send: 'sendMessage', poll: 'getUpdates' },
  max: { send: 'messages', poll: 'updates' },
} as const;

/** The path of every string in `value` that holds a character no text may hold. */
function uncleanFields(value: unknown, path: string): string[] {
  if (typeof value === 'string') return isCleanText(value) ? [] : [path];
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array || value instanceof Date)
    return [];
  return Object.entries(value).flatMap(([key, item]) => uncleanFields(item, `${path}.${key}`));
}

export async function runHostileAnswers(o: HostileAnswersOptions): Promise<HostileAnswersResult> {
  const methods = METHODS[o.messenger];
  const deliveryTopicSpec = deliveryTopic(o.messenger);
  const codecCleaned: UncleanText[] = [];
  const stopListening = onUncleanText((found) => codecCleaned.push(found));
  const stack = await startSenderStack();
  const [messages, updates] = await Promise.all([
    stack.collect(topics.message),
    stack.collect(topics.botUpdate),
  ]);
  const lines: string[] = [];
  const sender = await o.start(
    { ...stack.senderEnv, SEND_TIMEOUT_MS: '2000', RETRY_BASE_MS: '100', RETRY_MAX_MS: '500' },
    capturingLogger(lines),
  );
  try {
    const bot = await stack.createBot(o.messenger, 'hostile');
    const person = await stack.createPerson({ firstName: HOSTILE_NAME, lastName: 'x'.repeat(60_000) });
    const act = (body: Record<string, unknown>) =>
      stack.control<ActionAnswer>('POST', `/people/${person.id}/actions`, {
        bot_id: bot.simId,
        ...body,
      });
    const started = await act({ action: 'start' });
    // Someone else's card first (a number with a NUL in it: not theirs, ignored), then their own.
    await act({
      action: 'share_contact',
      contact: { phone_number: '7912\u0000\u001b', first_name: HOSTILE_NAME },
    });
    await act({ action: 'share_contact' });
    const chat = chatOfStart(o.messenger, bot, person, started);
    const linked = await eventually(
      'the registry links the person of the hostile name',
      async () => {
        const r = await stack.admin<{ exists: boolean }>(
          'GET',
          `/companies/${stack.companyId}/clients/${person.phone}`,
        );
        return r.body.exists ? true : undefined;
      },
      30_000,
    );

    const outcome = async (deadlineMs = 30_000) => {
      const [id] = await publishDeliveries(stack, deliveryTopicSpec, [
        deliveryRequest(stack.companyId, chat, { deadlineMs }),
      ]);
      return eventually(`outcome of ${id}`, () => outcomesOf(messages.events, [id!])[0], 40_000);
    };
    const describe = (e: Complete<MessageEvent>) =>
      e.event.$case === 'messageDeliveryFailed'
        ? {
            outcome: e.event.$case,
            code: e.event.value.errorCode,
            description: e.event.value.errorDescription,
          }
        : { outcome: e.event.$case, code: '', description: '' };

    const outcomes: HostileAnswersResult['outcomes'] = [];
    for (const [answer, fault] of [
      ['controls', { hostile: 'controls' }],
      ['invalid-utf8', { hostile: 'invalid-utf8', status: 403 }],
      ['huge', { hostile: 'huge' }],
      ['not-json', { hostile: 'not-json', status: 502 }],
      // A server error of a megabyte: retried (its words in the logs and the retry's last error), then sent.
      ['huge 503', { hostile: 'huge', status: 503 }],
    ] as const) {
      await stack.control('POST', '/faults', {
        kind: 'hostile-error',
        bot_id: bot.simId,
        method: methods.send,
        ...fault,
      });
      outcomes.push({ answer, ...describe(await outcome()) });
    }
    // Polls answered with a megabyte of controls: logged, bounded, and polling goes on.
    const from = lines.length;
    await stack.control('POST', '/faults', {
      kind: 'hostile-error',
      bot_id: bot.simId,
      method: methods.poll,
      hostile: 'huge',
      count: 2,
    });
    await eventually(
      'a failed poll logged',
      () => (lines.slice(from).some((l) => l.includes('reading updates failed')) ? true : undefined),
      30_000,
    );
    const last = describe(await outcome());

    const longest = lines
      .filter((l) => !l.includes('"component":"kafkajs"'))
      .reduce((a, b) => (b.length > a.length ? b : a), '');
    const ours = (e: Complete<StreamRecord>) => e.metadata.companyId === stack.companyId;
    const unclean = [
      ...messages.events.filter(ours).flatMap((e) => uncleanFields(e, e.metadata.type)),
      ...updates.events.filter(ours).flatMap((e) => uncleanFields(e, e.metadata.type)),
    ];
    return {
      outcomes,
      unclean,
      codecCleaned,
      longestLogLine: longest.length,
      longestLogLineStart: longest.slice(0, 300),
      linked,
      lastOutcome: last.outcome,
    };
  } finally {
    stopListening();
    await sender.stop();
    await Promise.all([messages.stop(), updates.stop()]);
    await stack.stop();
  }
}

/**
 * What each answer must come to. The words the messenger said are kept, with U+FFFD for what no text may hold.
 * An answer that is no JSON: grammY fails the call as one with no answer (it may have been delivered); the MAX
 * SDK reads a 502 without JSON as a MaxError 502, retried like any server error, then sent.
 */
type Expected = Record<string, { outcome: string; code?: string; words?: RegExp }>;
const BOTH: Expected = {
  controls: {
    outcome: 'messageDeliveryFailed',
    code: 'INVALID_MESSAGE',
    words: /nul \ufffd bel \ufffd esc \ufffd\[31m del \ufffd nel \ufffd/,
  },
  'invalid-utf8': { outcome: 'messageDeliveryFailed', words: /broken \ufffd+ \ufffd+ bytes/ },
  huge: { outcome: 'messageDeliveryFailed', code: 'INVALID_MESSAGE' },
  'huge 503': { outcome: 'messageSent' },
};
const EXPECTED: Record<BuiltInMessengerName, Expected> = {
  telegram: { ...BOTH, 'not-json': { outcome: 'messageDeliveryFailed', code: 'DELIVERY_UNCONFIRMED' } },
  max: { ...BOTH, 'not-json': { outcome: 'messageSent' } },
};

/** Everything the run showed wrong, each named; empty when all is well. */
export function hostileAnswersProblems(messenger: BuiltInMessengerName, r: HostileAnswersResult): string[] {
  const problems: string[] = [];
  for (const o of r.outcomes) {
    const want = EXPECTED[messenger][o.answer];
    if (!isCleanText(o.description)) problems.push(`${o.answer}: a description no text may be`);
    if (o.description.length > 2_000) problems.push(`${o.answer}: a description of ${o.description.length}`);
    if (want && o.outcome !== want.outcome) problems.push(`${o.answer}: ${o.outcome}, not ${want.outcome}`);
    if (want?.code && o.code !== want.code) problems.push(`${o.answer}: ${o.code}, not ${want.code}`);
    if (want?.words && !want.words.test(o.description))
      problems.push(`${o.answer}: "${o.description.slice(0, 200)}"`);
  }
  if (r.outcomes.length !== Object.keys(EXPECTED[messenger]).length)
    problems.push('an answer without its outcome');
  problems.push(...r.unclean.map((field) => `an event field no text may be: ${field}`));
  // No event needed the codec's last line of defence: the sender cleaned what it was told.
  problems.push(...r.codecCleaned.map((f) => `the codec had to clean ${f.messageType} ${f.field}`));
  if (r.longestLogLine >= 20_000)
    problems.push(`a log line of ${r.longestLogLine}: ${r.longestLogLineStart}`);
  if (!r.linked) problems.push('the person of the hostile name was not linked');
  if (r.lastOutcome !== 'messageSent') problems.push(`the last message: ${r.lastOutcome}`);
  return problems;
}
