import { SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { RedactingSpanProcessor, scrubbedText, templatedPath, templatedUrl } from './redaction.js';

const TOKEN = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const PHONE = '79161234567';

describe('templates of URLs and paths', () => {
  it('take bot tokens, phone numbers and token-like segments out of paths, and keep our ids', () => {
    expect(templatedPath(`/bot${TOKEN}/sendMessage`)).toBe('/bot***/sendMessage');
    expect(templatedPath(`/api/clients/${PHONE}`)).toBe('/api/clients/{phone}');
    expect(templatedPath(`/clients/%2B${PHONE}/forget`)).toBe('/clients/{phone}/forget');
    const company = '0b9c3c1e-8f4e-4a55-9c43-3f1b4a1f2d11';
    expect(templatedPath(`/admin/v1/companies/${company}/clients/${PHONE}/forget`)).toBe(
      `/admin/v1/companies/${company}/clients/{phone}/forget`,
    );
    expect(templatedPath('/deliveries/msg_0123456789abcdef0123456789abcdef')).toBe(
      '/deliveries/msg_0123456789abcdef0123456789abcdef',
    );
    expect(templatedPath('/hooks/T0123ABCD/B0456EFGH/xoxb8a7Sd6fGh5jK4lZ3')).toBe(
      '/hooks/T0123ABCD/B0456EFGH/***',
    );
    expect(templatedPath('/api/v1/client/check')).toBe('/api/v1/client/check');
  });

  it('read express routes as templates', () => {
    expect(templatedPath('/bot:token/:method')).toBe('/bot{token}/{method}');
    expect(templatedPath('/api/clients/:phone')).toBe('/api/clients/{phone}');
  });

  it('drop the query (a receiver token, an access_token), credentials and fragment of a URL', () => {
    expect(templatedUrl('https://hooks.example.com/in?token=s3cr3t&x=1#frag')).toBe(
      'https://hooks.example.com/in?[redacted]',
    );
    expect(templatedUrl('https://user:pass@api.example.com/me')).toBe('https://api.example.com/me');
    expect(templatedUrl(`http://127.0.0.1:8090/bot${TOKEN}/getMe`)).toBe(
      'http://127.0.0.1:8090/bot***/getMe',
    );
    expect(templatedUrl('/messages?access_token=abc')).toBe('/messages');
  });

  it('scrub free text: URLs, tokens and numbers in an error message or a name', () => {
    expect(scrubbedText(`request to http://sim/bot${TOKEN}/sendMessage?chat_id=1 failed for +${PHONE}`)).toBe(
      'request to http://sim/bot***/sendMessage?[redacted] failed for {phone}',
    );
    expect(scrubbedText(`token ${TOKEN} refused`)).toBe('token *** refused');
    expect(scrubbedText(`GET /api/clients/${PHONE}`)).toBe('GET /api/clients/{phone}');
    expect(scrubbedText('select * from t where a = $1 limit 10')).toBe(
      'select * from t where a = $1 limit 10',
    );
  });
});

describe('the redacting span processor', () => {
  it('rewrites every span before an exporter sees it: attributes, events, status and name', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({
      spanProcessors: [new RedactingSpanProcessor(), new SimpleSpanProcessor({ exporter })],
    });
    const span = provider.getTracer('t').startSpan(`GET /api/clients/${PHONE}`, {
      attributes: {
        'url.full': `https://api.telegram.org/bot${TOKEN}/sendMessage?chat_id=42`,
        'url.path': `/clients/${PHONE}/forget`,
        'url.query': 'token=s3cr3t',
        'http.route': '/api/clients/:phone',
        'http.response.status_code': 200,
        'mds.message_id': '0b9c3c1e-8f4e-4a55-9c43-3f1b4a1f2d11',
      },
    });
    span.recordException(new Error(`fetch http://hooks.example/in?token=s3cr3t failed: ${TOKEN}`));
    span.setStatus({ code: SpanStatusCode.ERROR, message: `no such client ${PHONE}` });
    span.end();
    await provider.forceFlush();
    const [out] = exporter.getFinishedSpans();
    expect(out!.name).toBe('GET /api/clients/{phone}');
    expect(out!.attributes).toEqual({
      'url.full': 'https://api.telegram.org/bot***/sendMessage?[redacted]',
      'url.path': '/clients/{phone}/forget',
      'http.route': '/api/clients/{phone}',
      'http.response.status_code': 200,
      'mds.message_id': '0b9c3c1e-8f4e-4a55-9c43-3f1b4a1f2d11',
    });
    expect(out!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'no such client {phone}' });
    const serialized = JSON.stringify([out!.attributes, out!.events, out!.status, out!.name]);
    for (const secret of [TOKEN, PHONE, 's3cr3t', 'chat_id']) expect(serialized).not.toContain(secret);
    expect(out!.events[0]!.attributes?.['exception.message']).toBe(
      'fetch http://hooks.example/in?[redacted] failed: ***',
    );
    await provider.shutdown();
  });
});
