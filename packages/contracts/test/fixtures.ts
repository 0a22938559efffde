import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deliveryTopic, newEvent, topics, type StreamCodec, type StreamRecord } from '../src/index.js';
import * as samples from './samples.js';

export const fixturesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'v1');

/** Every stream record type with its samples, one entry per protobuf record type. */
export const streams: { codec: StreamCodec<StreamRecord>; samples: Record<string, unknown> }[] = [
  { codec: topics.message.codec, samples: samples.messageSamples },
  { codec: deliveryTopic('telegram').codec, samples: samples.deliverySamples },
  { codec: topics.clientRequest.codec, samples: samples.clientRequestSamples },
  { codec: topics.botUpdate.codec, samples: samples.botUpdateSamples },
  { codec: topics.client.codec, samples: samples.clientSamples },
  { codec: topics.account.codec, samples: samples.accountSamples },
  { codec: topics.webhook.codec, samples: samples.webhookSamples },
  { codec: topics.apiRequests.codec, samples: samples.apiRequestSamples },
] as never;

export function sampleRecord(eventCase: string, value: unknown): StreamRecord {
  return newEvent({ ...samples.metadataSample, event: { $case: eventCase, value } });
}

export function fixturePath(messageType: string, eventCase: string, ext: 'bin' | 'json'): string {
  return join(fixturesDir, messageType, `${eventCase}.${ext}`);
}

/** Writes the fixture of every sample that has none yet. Existing fixtures are never rewritten. */
export function writeMissingFixtures(): string[] {
  const written: string[] = [];
  for (const { codec, samples: byCase } of streams) {
    for (const [eventCase, value] of Object.entries(byCase)) {
      const bin = fixturePath(codec.messageType, eventCase, 'bin');
      if (existsSync(bin)) continue;
      mkdirSync(dirname(bin), { recursive: true });
      const record = sampleRecord(eventCase, value);
      writeFileSync(bin, codec.encode(record));
      writeFileSync(
        fixturePath(codec.messageType, eventCase, 'json'),
        JSON.stringify(codec.toJSON(record), null, 2) + '\n',
      );
      written.push(`${codec.messageType}/${eventCase}`);
    }
  }
  return written;
}

export function storedFixtures(): { messageType: string; eventCase: string; bin: Buffer; json: unknown }[] {
  if (!existsSync(fixturesDir)) return [];
  return readdirSync(fixturesDir).flatMap((messageType) =>
    readdirSync(join(fixturesDir, messageType))
      .filter((f) => f.endsWith('.bin'))
      .map((f) => {
        const eventCase = f.slice(0, -'.bin'.length);
        return {
          messageType,
          eventCase,
          bin: readFileSync(join(fixturesDir, messageType, f)),
          json: JSON.parse(readFileSync(fixturePath(messageType, eventCase, 'json'), 'utf8')) as unknown,
        };
      }),
  );
}
