import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  KafkaDataVersionError,
  recordVersionThatMade,
  refuseDataOfAnotherVersion,
  sameKafkaLine,
  versionThatMade,
} from './kafka-data-version.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A node folder inside a run folder named `run`, with formatted data when `formatted`. */
function nodeFolder(run: string, formatted: boolean): string {
  const root = mkdtempSync(join(tmpdir(), 'mds-kafka-data-'));
  folders.push(root);
  const node = join(root, run, 'kafka');
  mkdirSync(join(node, 'data'), { recursive: true });
  if (formatted) writeFileSync(join(node, 'data', 'meta.properties'), 'version=1\nnode.id=1\n');
  return node;
}

describe('the Kafka version that made a run’s data', () => {
  it('is the one recorded at its first format', () => {
    const node = nodeFolder('dev', true);
    recordVersionThatMade(node, '4.4.0');
    expect(versionThatMade(node)).toBe('4.4.0');
  });

  it('is, for data formatted before that was recorded, the version its first start logged', () => {
    const node = nodeFolder('dev', true);
    writeFileSync(
      join(node, 'broker.log'),
      '[t] INFO Kafka version: 3.9.1 (org.apache.kafka.common.utils.AppInfoParser)\n' +
        '[t] INFO Kafka version: 4.4.0 (org.apache.kafka.common.utils.internals.AppInfoParser)\n',
    );
    expect(versionThatMade(node)).toBe('3.9.1');
  });

  it('is unknown where there is no data yet, and nothing is refused there', () => {
    const node = nodeFolder('dev', false);
    writeFileSync(join(node, 'broker.log'), '[t] INFO Kafka version: 3.9.1 (x)\n');
    expect(versionThatMade(node)).toBeUndefined();
    expect(() => refuseDataOfAnotherVersion(node, '4.4.0')).not.toThrow();
  });
});

describe('starting a run’s data with another Kafka', () => {
  it('is refused from 4.4 to 3.9, saying why and both ways out', () => {
    const node = nodeFolder('dev', true);
    recordVersionThatMade(node, '4.4.0');
    let refusal: unknown;
    try {
      refuseDataOfAnotherVersion(node, '3.9.1');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(KafkaDataVersionError);
    const message = (refusal as Error).message;
    expect(message).toContain('made by Apache Kafka 4.4.0, and this start asks for Apache Kafka 3.9.1');
    expect(message).toContain('3.9.1 cannot read the metadata 4.4.0 wrote');
    expect(message).toContain('MDS_KAFKA_VERSION=4.4.0');
    expect(message).toContain('`npm start -- --fresh` (or `npm run reset`)');
  });

  it('is refused from 3.9 to 4.4 as well; a run of another name is to be removed', () => {
    const node = nodeFolder('drills', true);
    recordVersionThatMade(node, '3.9.1');
    expect(() => refuseDataOfAnotherVersion(node, '4.4.0')).toThrow(
      /made by Apache Kafka 3\.9\.1, and this start asks for Apache Kafka 4\.4\.0: .*MDS_KAFKA_VERSION=3\.9\.1.*remove .*drills\./s,
    );
  });

  it('is allowed within one line (a patch release)', () => {
    const node = nodeFolder('dev', true);
    recordVersionThatMade(node, '4.4.0');
    expect(() => refuseDataOfAnotherVersion(node, '4.4.1')).not.toThrow();
    expect(sameKafkaLine('4.4.0', '4.4.1')).toBe(true);
    expect(sameKafkaLine('4.4.0', '4.10.0')).toBe(false);
  });
});
