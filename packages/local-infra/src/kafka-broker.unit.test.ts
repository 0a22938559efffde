import { describe, expect, it } from 'vitest';
import { serverProperties } from './kafka-broker.js';
import { brokerDependencies, log4jVersionIn, loggingBinding } from './kafka-jars.js';
import { checkJava } from './java.js';
import { kafkaContainerEnvironment } from './containers.js';

describe('broker jars', () => {
  it('add the logging backend that Kafka 3.9 leaves out of its POM', () => {
    expect(brokerDependencies('3.9.1').map((d) => `${d.groupId}:${d.artifactId}:${d.version}`)).toEqual([
      'org.apache.kafka:kafka_2.13:3.9.1',
      'org.slf4j:slf4j-reload4j:1.7.36',
      'ch.qos.reload4j:reload4j:1.2.25',
    ]);
  });

  it('for Kafka 4, add the SLF4J 1 binding of log4j2 at the version of the log4j2 Kafka brings', () => {
    expect(brokerDependencies('4.4.0').map((d) => d.artifactId)).toEqual(['kafka_2.13']);
    const resolved = [
      'kafka_2.13-4.4.0.jar',
      'log4j-api-2.25.5.jar',
      'log4j-core-2.25.5.jar',
      'slf4j-api-1.7.36.jar',
    ];
    expect(log4jVersionIn(resolved)).toBe('2.25.5');
    expect(loggingBinding('2.25.5').map((d) => `${d.groupId}:${d.artifactId}:${d.version}`)).toEqual([
      'org.apache.logging.log4j:log4j-slf4j-impl:2.25.5',
    ]);
  });

  it('for Kafka 4.0, whose POM brings no log4j2 at all, add log4j2 too', () => {
    expect(log4jVersionIn(['kafka_2.13-4.0.0.jar', 'slf4j-api-1.7.36.jar'])).toBeUndefined();
    expect(loggingBinding(undefined).map((d) => `${d.artifactId}:${d.version}`)).toEqual([
      'log4j-slf4j-impl:2.24.3',
      'log4j-core:2.24.3',
      'log4j-api:2.24.3',
    ]);
  });
});

describe('checkJava', () => {
  it('finds Java 17 or later on this machine', () => {
    expect(checkJava().major).toBeGreaterThanOrEqual(17);
  });

  it('says what to install when there is no Java', () => {
    expect(() => checkJava({ JAVA_HOME: '/nonexistent' })).toThrow(/Java 17\+ is needed.*Install a JDK/s);
  });
});

describe('server properties', () => {
  const base = { version: '3.9.1', dir: '/tmp/k', port: 9092, controllerPort: 9093 };
  it('are plaintext without authorization by default', () => {
    const properties = serverProperties(base);
    expect(properties).toContain('listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093');
    expect(properties).not.toMatch(/sasl|authorizer/i);
  });

  it('with security: SASL/SCRAM on the client listener and the StandardAuthorizer, admin a super user', () => {
    const properties = serverProperties({ ...base, security: { admin: { name: 'admin', password: 'pw' } } });
    expect(properties).toContain('listeners=SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093');
    expect(properties).toContain('advertised.listeners=SASL_PLAINTEXT://127.0.0.1:9092');
    expect(properties).toContain('sasl.enabled.mechanisms=SCRAM-SHA-512');
    expect(properties).toContain(
      'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    );
    expect(properties).toContain('super.users=User:admin;User:ANONYMOUS');
    expect(properties).toContain('allow.everyone.if.no.acl.found=false');
    expect(properties).not.toMatch(/[=,]PLAINTEXT:\/\//);
  });
});

describe('the Kafka container (MDS_INFRA=containers)', () => {
  /** KAFKA_FOO_BAR=x as Apache Kafka's image reads it: foo.bar=x. */
  const asProperties = (environment: Record<string, string>) =>
    new Map(
      Object.entries(environment)
        .filter(([name]) => name.startsWith('KAFKA_'))
        .map(([name, value]) => [name.slice('KAFKA_'.length).toLowerCase().replaceAll('_', '.'), value]),
    );
  const local = (version: string) =>
    new Map(
      serverProperties({ version, dir: '/tmp/k', port: 9092, controllerPort: 9093 })
        .trim()
        .split('\n')
        .map((l) => l.split('=', 2) as [string, string]),
    );

  it.each(['4.4.0', '3.9.1'])('is configured as the local broker is, on Kafka %s', (version) => {
    const container = asProperties(kafkaContainerEnvironment(version));
    const addressed =
      /^(listeners|advertised\.listeners|controller\.quorum\.voters|listener\.security\.protocol\.map|inter\.broker\.listener\.name)$/;
    const shared = [...local(version)].filter(([key]) => container.has(key) && !addressed.test(key));
    expect(shared.map(([key]) => key)).toEqual(
      expect.arrayContaining(['offsets.topic.replication.factor', 'auto.create.topics.enable']),
    );
    for (const [key, value] of shared) expect(container.get(key), key).toBe(value);
    const sharesCoordinator = container.has('share.coordinator.state.topic.replication.factor');
    expect(sharesCoordinator).toBe(version.startsWith('4.'));
  });
});
