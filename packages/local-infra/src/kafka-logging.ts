// The broker's logging: console only, warnings and up, plus the lines that say it started and which version
// it is. Kafka 3 logs through reload4j (log4j 1 properties), Kafka 4 through log4j2 (its properties format).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes the logging configuration of a Kafka `version` into the node's folder; answers the file and the JVM
 * flag that points the broker at it.
 */
export function loggingConfig(version: string, dir: string): { file: string; flag: string } {
  if (version.startsWith('3.')) {
    const file = join(dir, 'log4j.properties');
    writeFileSync(
      file,
      [
        'log4j.rootLogger=WARN, stdout',
        'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
        'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
        'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
        'log4j.logger.kafka.server.KafkaRaftServer=INFO',
        'log4j.logger.org.apache.kafka.common.utils.AppInfoParser=INFO',
      ].join('\n') + '\n',
    );
    return { file, flag: `-Dlog4j.configuration=file:${file}` };
  }
  const file = join(dir, 'log4j2.properties');
  writeFileSync(
    file,
    [
      'appender.console.type=Console',
      'appender.console.name=STDOUT',
      'appender.console.layout.type=PatternLayout',
      'appender.console.layout.pattern=[%d] %p %m (%c)%n',
      'rootLogger.level=WARN',
      'rootLogger.appenderRef.stdout.ref=STDOUT',
      'logger.srv.name=kafka.server.KafkaRaftServer',
      'logger.srv.level=INFO',
      // The version line ("Kafka version: 4.4.0"), logged by AppInfoParser: in `utils.internals` in later 4.x
      // releases (4.4), in `utils` before.
      'logger.version.name=org.apache.kafka.common.utils.internals.AppInfoParser',
      'logger.version.level=INFO',
      'logger.versionBefore.name=org.apache.kafka.common.utils.AppInfoParser',
      'logger.versionBefore.level=INFO',
    ].join('\n') + '\n',
  );
  return { file, flag: `-Dlog4j2.configurationFile=${file}` };
}
