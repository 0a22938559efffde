import { describe, expect, it } from 'vitest';
import { redactedUrl, withLogContext } from './index.js';
import { capturedLogger } from './testing.js';

const capture = () => capturedLogger('test-svc');

describe('createLogger', () => {
  it('writes JSON with service, level name and ISO time', () => {
    const { lines, logger } = capture();
    logger.info({ n: 1 }, 'hello');
    expect(lines[0]).toMatchObject({ service: 'test-svc', level: 'info', msg: 'hello', n: 1 });
    expect(String(lines[0]!.time)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('adds the request and correlation ids of the current context, across awaits', async () => {
    const { lines, logger } = capture();
    await withLogContext({ requestId: 'r-1' }, async () => {
      await new Promise((r) => setTimeout(r, 1));
      await withLogContext({ correlationId: 'c-1' }, async () => {
        await Promise.resolve();
        logger.info('inside');
      });
    });
    logger.info('outside');
    expect(lines[0]).toMatchObject({ requestId: 'r-1', correlationId: 'c-1' });
    expect(lines[1]).not.toHaveProperty('requestId');
  });

  it('never writes API keys, tokens or secrets', () => {
    const { lines, logger } = capture();
    logger.info({ req: { headers: { 'x-api-key': 'k-secret', authorization: 'Bearer t' } } }, 'request');
    logger.info({ bot: { token: '123:ABC' }, webhook: { secret: 'whsec_x' }, apiKey: 'k2' }, 'things');
    const text = JSON.stringify(lines);
    for (const leaked of ['k-secret', 'Bearer t', '123:ABC', 'whsec_x', 'k2'])
      expect(text).not.toContain(leaked);
  });
});

describe('redactedUrl', () => {
  it('drops user info, query and fragment, and says a query was there', () => {
    expect(redactedUrl('https://user:pw@hooks.example.com:8443/in/x?token=t0k3n&a=1#frag')).toBe(
      'https://hooks.example.com:8443/in/x?[redacted]',
    );
    expect(redactedUrl('https://hooks.example.com/in')).toBe('https://hooks.example.com/in');
    expect(redactedUrl('not a url with secret')).toBe('[invalid url]');
  });
});
