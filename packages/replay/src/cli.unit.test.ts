import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from './cli.js';

describe('mds-replay command line', () => {
  it('reads each command with its options', () => {
    expect(parseCommand(['rebuild', '--schema', 'gateway_v2'])).toEqual({
      command: 'rebuild',
      schema: 'gateway_v2',
      formats: ['parquet', 'csv'],
      progress: true,
    });
    expect(
      parseCommand([
        'export',
        '--out',
        'dump',
        '--company',
        'c1',
        '--from',
        '2026-01-01T00:00:00Z',
        '--to',
        '2026-02-01',
        '--format',
        'parquet',
        '--no-progress',
      ]),
    ).toEqual({
      command: 'export',
      out: 'dump',
      companyId: 'c1',
      from: new Date('2026-01-01T00:00:00Z'),
      to: new Date('2026-02-01T00:00:00Z'),
      formats: ['parquet'],
      progress: false,
    });
    expect(parseCommand(['summary'])).toMatchObject({ command: 'summary' });
  });

  it.each([
    [[], 'missing command'],
    [['replay'], 'unknown command "replay"'],
    [['rebuild'], 'rebuild needs --schema'],
    [['export'], 'export needs --out'],
    [['summary', 'extra'], 'unexpected argument "extra"'],
    [['summary', '--from', 'last tuesday'], '--from must be an ISO 8601 time'],
    [['summary', '--from', '2026-02-01', '--to', '2026-01-01'], '--to must be after --from'],
    [['export', '--out', 'x', '--format', 'xlsx'], '--format is parquet, csv or both'],
    [['summary', '--colour'], "Unknown option '--colour'"],
  ])('refuses %j: %s', (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });
});
