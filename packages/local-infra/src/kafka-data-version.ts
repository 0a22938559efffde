// Which Apache Kafka version made a node's data, and the refusal to start it with another. A broker reads
// only the metadata record versions it knows: Kafka 3.9 on data Kafka 4 wrote dies deep in its start-up
// ("UnsupportedVersionException: Can't read version 4 of BrokerEndpoint"), so we say so before the JVM starts.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Beside a node's `data` folder: the Kafka version whose storage tool formatted it. */
const MADE_BY = 'made-by-kafka-version';

/** The `major.minor` line of a version: patch releases of a line share its metadata versions. */
function line(version: string): [number, number] {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return [major, minor];
}

/** Negative when `a`'s line is older than `b`'s, 0 when they are one line. */
function compareLines(a: string, b: string): number {
  const [x, y] = [line(a), line(b)];
  return x[0] - y[0] || x[1] - y[1];
}

/** The first version a broker logged in `logFile` ("Kafka version: 3.9.1"), the one that made its data. */
function firstLoggedVersion(logFile: string): string | undefined {
  if (!existsSync(logFile)) return undefined;
  return /Kafka version: (\S+)/.exec(readFileSync(logFile, 'utf8'))?.[1];
}

/**
 * The Kafka version that made a node's data: as recorded when it was formatted, or, for data formatted
 * before that record existed, the version its first start logged. Undefined when the node has no data yet
 * (or nothing tells).
 */
export function versionThatMade(nodeDir: string): string | undefined {
  const recorded = join(nodeDir, MADE_BY);
  if (existsSync(recorded)) return readFileSync(recorded, 'utf8').trim() || undefined;
  if (!existsSync(join(nodeDir, 'data', 'meta.properties'))) return undefined;
  return firstLoggedVersion(join(nodeDir, 'broker.log'));
}

/** Whether the node has formatted data (then `recordVersionThatMade` after a format records nothing new). */
export function hasData(nodeDir: string): boolean {
  return existsSync(join(nodeDir, 'data', 'meta.properties'));
}

/** Records the version that made the node's data (once: its first format, or the first start that knew). */
export function recordVersionThatMade(nodeDir: string, version: string): void {
  writeFileSync(join(nodeDir, MADE_BY), `${version}\n`);
}

export class KafkaDataVersionError extends Error {
  constructor(
    readonly nodeDir: string,
    readonly madeBy: string,
    readonly asked: string,
  ) {
    const runFolder = dirname(nodeDir);
    const afresh =
      basename(runFolder) === 'dev'
        ? `\`npm start -- --fresh\` (or \`npm run reset\`) empties ${runFolder}`
        : `remove ${runFolder}`;
    super(
      `${runFolder} holds Kafka data made by Apache Kafka ${madeBy}, and this start asks for Apache Kafka ` +
        `${asked}: a run's data stays with the Kafka version that made it` +
        (compareLines(asked, madeBy) < 0 ? ` (${asked} cannot read the metadata ${madeBy} wrote)` : '') +
        '. Either\n' +
        `  - run the version it was made with: MDS_KAFKA_VERSION=${madeBy}, or\n` +
        `  - start afresh with ${asked}: ${afresh}.`,
    );
    this.name = 'KafkaDataVersionError';
  }
}

/** Whether two versions are of one Kafka line (4.4.0 and 4.4.1 are; 3.9.1 and 4.4.0 are not). */
export function sameKafkaLine(a: string, b: string): boolean {
  return compareLines(a, b) === 0;
}

/**
 * Refuses, before anything starts, data that another Kafka line made (4.4 and 3.9 are different lines;
 * 4.4.0 and 4.4.1 are one).
 */
export function refuseDataOfAnotherVersion(nodeDir: string, version: string): void {
  const madeBy = versionThatMade(nodeDir);
  if (madeBy !== undefined && !sameKafkaLine(madeBy, version)) {
    throw new KafkaDataVersionError(nodeDir, madeBy, version);
  }
}
