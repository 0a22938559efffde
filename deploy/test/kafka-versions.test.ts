import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_KAFKA_VERSION, KAFKA_3_VERSION } from '@mds/local-infra';
import { chart, root } from './support.js';

// Where the supported Apache Kafka versions are stated, they are the ones the tests run: every test on the
// default, one integration job on the 3.x line. Bumping the default without the statements fails here.

describe('the supported Kafka versions', () => {
  it('the chart names the range from the 3.x job’s version to the default', () => {
    const { annotations } = parse(readFileSync(join(chart, 'Chart.yaml'), 'utf8')) as {
      annotations?: Record<string, string>;
    };
    expect(annotations?.['messenger-delivery/kafka-versions']).toBe(
      `>=${KAFKA_3_VERSION} <=${DEFAULT_KAFKA_VERSION}`,
    );
  });

  it('the operators’ and developers’ docs name the same, and compose.yaml runs the default', () => {
    const range = `Apache Kafka ${KAFKA_3_VERSION} to ${DEFAULT_KAFKA_VERSION}`;
    expect(readFileSync(join(root, 'deploy', 'README.md'), 'utf8')).toContain(range);
    const local = readFileSync(join(root, 'docs', 'local-development.md'), 'utf8');
    expect(local).toContain(`run Apache Kafka ${DEFAULT_KAFKA_VERSION}, the current release`);
    expect(local).toContain(`${KAFKA_3_VERSION} to ${DEFAULT_KAFKA_VERSION}`);
    const compose = parse(readFileSync(join(root, 'compose.yaml'), 'utf8'), { merge: true }) as {
      services: { kafka: { image: string } };
    };
    expect(compose.services.kafka.image).toContain(`apache/kafka:${DEFAULT_KAFKA_VERSION}`);
  });
});
