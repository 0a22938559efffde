import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { topics, UndecodableEventError, MessageEvent } from '../src/index.js';
import { fixturePath, sampleRecord, storedFixtures, streams } from './fixtures.js';

const root = join(import.meta.dirname, '../../..');
const buf = join(root, 'node_modules/.bin/buf');
const codecs = new Map(streams.map((s) => [s.codec.messageType, s.codec]));

describe('stored wire fixtures of every event', () => {
  const fixtures = storedFixtures();

  it('exist for every event of every stream', () => {
    const missing = streams.flatMap(({ codec, samples }) =>
      Object.keys(samples)
        .filter(
          (eventCase) =>
            !fixtures.some((f) => f.messageType === codec.messageType && f.eventCase === eventCase),
        )
        .map((eventCase) => `${codec.messageType}/${eventCase}`),
    );
    expect(missing, 'run `npm run proto:fixtures -w @mds/contracts` to store them').toEqual([]);
  });

  it.each(fixtures.map((f) => [`${f.messageType}/${f.eventCase}`, f] as const))(
    '%s decodes to the stored JSON and re-encodes to the same bytes',
    (_name, fixture) => {
      const codec = codecs.get(fixture.messageType);
      expect(codec, `no codec for ${fixture.messageType}`).toBeDefined();
      const decoded = codec!.decode(fixture.bin);
      expect(codec!.toJSON(decoded)).toEqual(fixture.json);
      expect(Buffer.from(codec!.encode(decoded))).toEqual(fixture.bin);
    },
  );

  it('still match what the current samples encode to (a changed sample needs a new fixture, not an edit)', () => {
    for (const { codec, samples } of streams) {
      for (const [eventCase, value] of Object.entries(samples)) {
        const stored = readFileSync(fixturePath(codec.messageType, eventCase, 'bin'));
        expect(
          Buffer.from(codec.encode(sampleRecord(eventCase, value))),
          `${codec.messageType}/${eventCase}`,
        ).toEqual(stored);
      }
    }
  });
});

describe('decoding', () => {
  it('rejects bytes that are not a record of the stream', () => {
    expect(() => topics.message.codec.decode(new Uint8Array([0xff, 0xff, 0xff]))).toThrow(
      UndecodableEventError,
    );
  });

  it('rejects a record without an envelope', () => {
    const bytes = MessageEvent.encode({
      event: { $case: 'messageSent', value: { botId: 'b', providerMessageId: '1', attempts: 1 } },
    }).finish();
    expect(() => topics.message.codec.decode(bytes)).toThrow(/without metadata/);
  });

  it('rejects a record whose event this build does not know (written by a newer producer)', () => {
    // Field 99 is no case of MessageEvent's oneof: a future event type.
    const envelope = MessageEvent.encode({
      metadata: {
        eventId: 'e',
        type: 'MessageTeleported',
        companyId: 'c',
        streamId: 's',
        correlationId: '',
        causationId: '',
        producer: 'p',
        traceparent: '',
        tracestate: '',
      },
    }).finish();
    const futureEvent = Uint8Array.from([...envelope, (99 << 3) | 2, 0]);
    expect(() => topics.message.codec.decode(futureEvent)).toThrow(/carries no event this build knows/);
  });
});

describe('buf breaking-change check against the committed baseline', () => {
  it('passes for the proto/ in this tree', () => {
    execFileSync(buf, ['breaking', 'proto', '--against', 'proto/compat/baseline.binpb'], {
      cwd: root,
      stdio: 'pipe',
    });
  });

  it('fails when a field of an existing event is renumbered', () => {
    const copy = mkdtempSync(join(tmpdir(), 'mds-proto-'));
    cpSync(join(root, 'proto'), copy, { recursive: true });
    const file = join(copy, 'mds/events/v1/message.proto');
    writeFileSync(file, readFileSync(file, 'utf8').replace('string text = 2;', 'string text = 99;'));
    const result = spawnSync(
      buf,
      ['breaking', copy, '--against', join(root, 'proto/compat/baseline.binpb')],
      {
        encoding: 'utf8',
      },
    );
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/MessageAccepted/);
  });

  it('passes buf lint', () => {
    execFileSync(buf, ['lint', 'proto'], { cwd: root, stdio: 'pipe' });
  });
});
