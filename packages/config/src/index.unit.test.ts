import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

describe('settings from files (NAME_FILE)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mds-config-'));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const { API_TOKEN: _token, ...withoutToken } = env;

  it('reads a setting from the file NAME_FILE names, without its trailing line break', () => {
    const config = loadConfig(schema, { ...withoutToken, API_TOKEN_FILE: file('token', 'from-file\n') });
    expect(config.API_TOKEN).toBe('from-file');
  });

  it('works for any setting, secret or not', () => {
    const config = loadConfig(schema, {
      ...env,
      KAFKA_BROKERS: undefined,
      KAFKA_BROKERS_FILE: file('b', 'x:1,y:2'),
    });
    expect(config.KAFKA_BROKERS).toEqual(['x:1', 'y:2']);
  });

  it('refuses both NAME and NAME_FILE, and a file it cannot read, naming the variable', () => {
    expect(() => loadConfig(schema, { ...env, API_TOKEN_FILE: file('t2', 'x') })).toThrow(
      /API_TOKEN: set API_TOKEN or API_TOKEN_FILE, not both/,
    );
    expect(() => loadConfig(schema, { ...withoutToken, API_TOKEN_FILE: dir })).toThrow(
      /API_TOKEN_FILE: cannot read .* \(EISDIR\)/,
    );
  });

  it('leaves a setting unset when its file does not exist (an optional Secret): required ones are reported', () => {
    expect(() => loadConfig(schema, { ...withoutToken, API_TOKEN_FILE: join(dir, 'missing') })).toThrow(
      /API_TOKEN: /,
    );
    const optional = z.object({ HOOK_SECRET: secret(z.string().optional()) });
    expect(loadConfig(optional, { HOOK_SECRET_FILE: join(dir, 'missing') })).toEqual({});
  });

  it('puts DATABASE_PASSWORD(_FILE) into a DATABASE_URL without one, escaped, and redacts it', () => {
    const config = loadConfig(schema, {
      ...env,
      DATABASE_URL: 'postgresql://svc@db:5432/mds?sslmode=verify-full',
      DATABASE_PASSWORD_FILE: file('db', 'p@ss/w:rd\n'),
    });
    expect(new URL(config.DATABASE_URL).password).toBe(encodeURIComponent('p@ss/w:rd'));
    expect(decodeURIComponent(new URL(config.DATABASE_URL).password)).toBe('p@ss/w:rd');
    expect(JSON.stringify(redact(schema, config))).not.toContain('w:rd');
    expect(() => loadConfig(schema, { ...env, DATABASE_PASSWORD: 'other' })).toThrow(
      /has a password already/,
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
