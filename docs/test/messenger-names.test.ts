import { describe, expect, it } from 'vitest';
import { repositoryRoot } from '../src/configuration.js';
import { filesSpellingMessengers, productionSources, spellingsIn } from '../src/messenger-names.js';

/**
 * The production files that may spell a messenger outside the catalogue, the providers and the simulator (at
 * most 3, docs/adding-a-messenger.md): a messenger added elsewhere would need each one edited.
 */
const ALLOWED: ReadonlyMap<string, string> = new Map([
  [
    'packages/contracts/src/gen/mds/events/v1/common.ts',
    'generated from proto/mds/events/v1/common.proto: enum Messenger names each code',
  ],
  [
    'packages/client/src/gen/api.ts',
    'generated from the OpenAPI document, which lists the built-in messengers',
  ],
  [
    'packages/contracts/src/error-catalogue.ts',
    "a bad token's remedy says where a Telegram bot's token comes from (BotFather)",
  ],
]);

describe('messenger names in production code', () => {
  it('are spelled in at most 3 files outside the catalogue, the providers and the simulator', () => {
    expect(ALLOWED.size).toBeLessThanOrEqual(3);
  });

  it('are spelled in no other production file (the list shows where)', { timeout: 60_000 }, () => {
    const found = filesSpellingMessengers(repositoryRoot);
    const listing = [...found]
      .filter(([file]) => !ALLOWED.has(file))
      .map(([file, at]) => `${file}: ${at.map((s) => `${s.line} ${JSON.stringify(s.text)}`).join(', ')}`);
    expect(listing.join('\n'), 'take these from the catalogue (@mds/contracts) or a provider').toBe('');
  });

  it('are still spelled in each allowed file (else it leaves the list)', { timeout: 60_000 }, () => {
    const found = filesSpellingMessengers(repositoryRoot);
    expect([...ALLOWED.keys()].filter((file) => !found.has(file))).toEqual([]);
  });

  it('are found as literals, labels, senders, topics and identifiers, never in comments', () => {
    const source = [
      "// Telegram's offset, MAX's marker: a comment may explain a rule by its cases",
      "const a = 'telegram';",
      'const b = `at most 4000 for MAX`;',
      "const c = { producer: 'max-sender', schema: 'telegram_sender' };",
      "const d = 'mds.delivery.max.v1';",
      'const TELEGRAM_TOKEN = /x/;',
      'const e = Messenger.MESSENGER_MAX;',
      "const f = { maxLength: 3, 'max-age': 60, label: 'MAXIMUM', g: Math.max(1, 2) };",
    ].join('\n');
    expect(spellingsIn('x.ts', source).map((s) => `${s.line} ${s.text}`)).toEqual([
      '2 telegram',
      '3 at most 4000 for MAX',
      '4 max-sender',
      '4 telegram_sender',
      '5 mds.delivery.max.v1',
      '6 TELEGRAM_TOKEN',
      '7 MESSENGER_MAX',
    ]);
    expect(
      spellingsIn('x.tsx', 'export const P = () => <b title="x">Telegram</b>;').map((s) => s.text),
    ).toEqual(['Telegram']);
  });

  it('are looked for in the services, the packages and the web app, not in tests', () => {
    const files = productionSources(repositoryRoot);
    expect(files).toContain('services/gateway/src/api/schemas.ts');
    expect(files).toContain('services/dashboard/web/src/pages/Send.tsx');
    expect(files).toContain('packages/contracts/src/gen/mds/events/v1/common.ts');
    expect(files.filter((f) => /\.test\.tsx?$|\/test\//.test(f))).toEqual([]);
  });
});
