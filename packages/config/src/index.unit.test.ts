import { describe, expect, it } from 'vitest';
import {
  bool,
  ConfigError,
  databaseEnv,
  kafkaEnv,
  loadConfig,
  redact,
  requireSasl,
  secret,
  serviceEnv,
  z,
} from './index.js';

const schema = z.object({
  ...serviceEnv,
  ...kafkaEnv,
  ...databaseEnv,
  API_TOKEN: secret(z.string()),
  FLAG: bool(false),
});

const env = {
  KAFKA_BROKERS: 'a:9092, b:9092',
  DATABASE_URL: 'postgres://svc:hunter2@db:5432/mds',
  API_TOKEN: 'tok-123',
};

describe('loadConfig', () => {
  it('applies defaults and coercions', () => {
    const config = loadConfig(schema, { ...env, HTTP_PORT: '9000', FLAG: 'yes' });
    expect(config.KAFKA_BROKERS).toEqual(['a:9092', 'b:9092']);
    expect(config.HTTP_PORT).toBe(9000);
    expect(config.FLAG).toBe(true);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.KAFKA_REPLICATION_FACTOR).toBe(1);
  });

  it('reports every invalid variable by name at once', () => {
    let error: unknown;
    try {
      loadConfig(schema, { HTTP_PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues.join('\n');
    for (const name of ['HTTP_PORT', 'DATABASE_URL', 'LOG_LEVEL', 'KAFKA_BROKERS', 'API_TOKEN']) {
      expect(issues).toContain(name);
    }
  });

  it('runs cross-field checks', () => {
    const withSasl = z.object(kafkaEnv).superRefine(requireSasl);
    expect(() => loadConfig(withSasl, { KAFKA_BROKERS: 'a:1', KAFKA_SASL_MECHANISM: 'plain' })).toThrow(
      /KAFKA_SASL_USERNAME/,
    );
  });
});

describe('redact', () => {
  it('hides secrets and the password of secret URLs, and keeps the rest', () => {
    const config = loadConfig(schema, { ...env, KAFKA_SASL_PASSWORD: 'p4ss' });
    const safe = redact(schema, config);
    const text = JSON.stringify(safe);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('tok-123');
    expect(text).not.toContain('p4ss');
    expect(safe.DATABASE_URL).toBe('postgres://svc:***@db:5432/mds');
    expect(safe.API_TOKEN).toBe('[redacted]');
    expect(safe.KAFKA_BROKERS).toEqual(['a:9092', 'b:9092']);
  });
});

describe('redact: credentials in a URL query', () => {
  it('hides ?password= and similar parameters of DATABASE_URL, and keeps the other parameters', () => {
    const config = loadConfig(schema, {
      ...env,
      DATABASE_URL:
        'postgres://svc@db:5432/mds?sslmode=require&password=hunter2&sslpassword=s3cr3t&application_name=x',
    });
    const safe = redact(schema, config);
    const url = String(safe.DATABASE_URL);
    expect(url).not.toContain('hunter2');
    expect(url).not.toContain('s3cr3t');
    expect(url).toContain('sslmode=require');
    expect(url).toContain('application_name=x');
    expect(url).toContain('&password=***&');
  });
});
