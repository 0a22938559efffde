import { describe, expect, it } from 'vitest';
import { classifySendFailure } from './classify.js';
import { factsOfUpdate, phoneOfVcard } from './updates.js';

describe('classifySendFailure', () => {
  it.each([
    [403, 'chat.denied', { kind: 'rejected', code: 'BOT_BLOCKED_BY_USER', unreachable: 'send-rejected' }],
    [404, 'chat.not.found', { kind: 'rejected', code: 'CHAT_NOT_FOUND' }],
    [400, 'proto.payload', { kind: 'rejected', code: 'INVALID_MESSAGE' }],
    [400, 'attachment.not.ready', { kind: 'transient' }],
    [401, 'verify.token', { kind: 'unauthorized' }],
    [429, 'too.many.requests', { kind: 'rate-limited' }],
    [200, 'too.many.requests', { kind: 'rate-limited' }],
    [503, 'service.unavailable', { kind: 'transient' }],
  ])('%i %s', (status, code, expected) => {
    expect(classifySendFailure({ status, code, message: 'm' })).toMatchObject(expected);
  });
});

const contact = (
  owner: number,
  sender: number,
  vcf = 'BEGIN:VCARD\r\nTEL;TYPE=cell:79123456789\r\nEND:VCARD\r\n',
) => ({
  update_type: 'message_created',
  timestamp: 5,
  message: {
    sender: { user_id: sender },
    recipient: { chat_id: 900, chat_type: 'dialog' },
    body: {
      mid: 'mid.1',
      attachments: [{ type: 'contact', payload: { vcf_info: vcf, max_info: { user_id: owner } } }],
    },
  },
});

describe('factsOfUpdate', () => {
  it('reads bot_started and bot_stopped', () => {
    const user = { user_id: 7, name: 'Ann' };
    expect(
      factsOfUpdate({ update_type: 'bot_started', timestamp: 1, chat_id: 900, user, payload: 'x' }),
    ).toEqual([{ kind: 'started', chatId: '900', userId: '7', updateId: 'bot_started:1:7' }]);
    expect(factsOfUpdate({ update_type: 'bot_stopped', timestamp: 2, chat_id: 900, user })).toEqual([
      { kind: 'blocked', chatId: '900', userId: '7', updateId: 'bot_stopped:2:7', reason: 'stopped' },
    ]);
  });

  it('takes the sender’s own contact only', () => {
    expect(factsOfUpdate(contact(7, 7))).toEqual([
      {
        kind: 'contact-shared',
        chatId: '900',
        userId: '7',
        updateId: 'message_created:mid.1',
        phone: '79123456789',
      },
    ]);
    expect(factsOfUpdate(contact(8, 7))).toEqual([]);
  });

  it('ignores other updates and malformed ones', () => {
    expect(factsOfUpdate({ update_type: 'dialog_muted', timestamp: 1 })).toEqual([]);
    expect(factsOfUpdate({ nonsense: true })).toEqual([]);
  });
});

describe('phoneOfVcard', () => {
  it('reads TEL lines with or without a plus, and escaped line breaks', () => {
    expect(phoneOfVcard('BEGIN:VCARD\r\nTEL;CELL:+79990001122\r\nEND:VCARD')).toBe('79990001122');
    expect(phoneOfVcard('BEGIN:VCARD\\r\\nTEL;TYPE=cell:79616594137\\r\\nEND:VCARD')).toBe('79616594137');
    expect(phoneOfVcard('BEGIN:VCARD\r\nFN:x\r\nEND:VCARD')).toBeNull();
  });
});
