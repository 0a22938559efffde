import { normalizeMessengerPhone } from '@mds/contracts/phone';
import type { BotFact } from '../bot-facts.js';
import { z } from 'zod';

const user = z.object({ user_id: z.number() });

// Only the fields the registry needs; anything else in MAX's updates passes through untouched.
const maxUpdate = z.discriminatedUnion('update_type', [
  z.object({ update_type: z.literal('bot_started'), timestamp: z.number(), chat_id: z.number(), user }),
  z.object({ update_type: z.literal('bot_stopped'), timestamp: z.number(), chat_id: z.number(), user }),
  z.object({
    update_type: z.literal('message_created'),
    timestamp: z.number(),
    message: z.object({
      sender: user.optional(),
      recipient: z.object({ chat_id: z.number().nullish() }),
      body: z.object({
        mid: z.string(),
        attachments: z
          .array(
            z.looseObject({
              type: z.string(),
              payload: z.looseObject({ vcf_info: z.string().nullish(), max_info: user.nullish() }).nullish(),
            }),
          )
          .nullish(),
      }),
    }),
  }),
]);

const TEL = /^TEL[^:\r\n]*:([^\r\n]+)$/im;

/** The phone number in a vCard's TEL line, normalised; null when there is none. */
export function phoneOfVcard(vcf: string): string | null {
  const tel = TEL.exec(vcf.replace(/\\r\\n/g, '\r\n'));
  return tel ? normalizeMessengerPhone(tel[1]!.trim()) : null;
}

/**
 * The facts in one MAX update: bot_started, bot_stopped, and a contact the sender shared of themselves
 * (max_info.user_id is the sender's: reference/max-bot-api.md §6). MAX updates carry no id; the dedupe
 * key is the update's type, time and person (and message id), the same each time the update is read.
 */
export function factsOfUpdate(raw: unknown): BotFact[] {
  const parsed = maxUpdate.safeParse(raw);
  if (!parsed.success) return [];
  const u = parsed.data;
  switch (u.update_type) {
    case 'bot_started':
    case 'bot_stopped': {
      const base = {
        chatId: String(u.chat_id),
        userId: String(u.user.user_id),
        updateId: `${u.update_type}:${u.timestamp}:${u.user.user_id}`,
      };
      return [
        u.update_type === 'bot_started'
          ? { kind: 'started', ...base }
          : { kind: 'blocked', ...base, reason: 'stopped' },
      ];
    }
    case 'message_created': {
      const sender = u.message.sender?.user_id;
      const chatId = u.message.recipient.chat_id;
      if (sender === undefined || chatId === undefined || chatId === null) return [];
      const contact = u.message.body.attachments?.find((a) => a.type === 'contact');
      if (!contact?.payload?.vcf_info || contact.payload.max_info?.user_id !== sender) return [];
      const phone = phoneOfVcard(contact.payload.vcf_info);
      if (!phone) return [];
      return [
        {
          kind: 'contact-shared',
          chatId: String(chatId),
          userId: String(sender),
          updateId: `message_created:${u.message.body.mid}`,
          phone,
        },
      ];
    }
  }
}
