import { describe, expect, it } from 'vitest';
import { conditionsOf } from './shards.js';

describe('the flags a built shard worker starts with', () => {
  it("are the parent's export conditions only, however written (no loader, no V8 flag)", () => {
    expect(
      conditionsOf([
        '--max-semi-space-size=32',
        '--import',
        'tsx',
        '--conditions=@mds/source',
        '--require=x',
        '-C',
        'development',
        '--conditions',
        'production',
      ]),
    ).toEqual(['--conditions=@mds/source', '-C', 'development', '--conditions', 'production']);
    expect(conditionsOf(['--import', 'tsx', '--max-semi-space-size=32'])).toEqual([]);
  });
});
