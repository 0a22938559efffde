import { Writable } from 'node:stream';
import { createLogger, type Logger } from './index.js';

/** A logger whose lines are kept, parsed, in `lines` (for tests that check what is logged). */
export function capturedLogger(service = 'test-svc'): { lines: Record<string, unknown>[]; logger: Logger } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ service, destination }) };
}
