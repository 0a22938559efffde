import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const MIN_JAVA_MAJOR = 17;

export function javaBinary(env: NodeJS.ProcessEnv = process.env): string {
  return env.JAVA_HOME ? join(env.JAVA_HOME, 'bin', 'java') : 'java';
}

/** The major version of the Java runtime, or a clear error saying what to install. */
export function checkJava(env: NodeJS.ProcessEnv = process.env): { binary: string; major: number } {
  const binary = javaBinary(env);
  const result = spawnSync(binary, ['-version'], { encoding: 'utf8' });
  if (result.error || result.status !== 0) {
    throw new Error(
      `Java ${MIN_JAVA_MAJOR}+ is needed to run the local Kafka broker, but \`${binary} -version\` failed` +
        ` (${result.error?.message ?? `exit ${result.status}`}). Install a JDK (Debian: apt-get install` +
        ' openjdk-17-jre-headless), set JAVA_HOME, or point KAFKA_BROKERS at an existing cluster.',
    );
  }
  const match = /version "(\d+)(?:\.(\d+))?/.exec(result.stderr);
  const first = Number(match?.[1]);
  const major = first === 1 ? Number(match?.[2]) : first;
  if (!Number.isFinite(major) || major < MIN_JAVA_MAJOR) {
    throw new Error(
      `Java ${MIN_JAVA_MAJOR}+ is needed to run the local Kafka broker; \`${binary} -version\` says: ` +
        `${result.stderr.split('\n')[0]}. Install a newer JDK or set JAVA_HOME.`,
    );
  }
  return { binary, major };
}
