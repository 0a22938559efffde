import type { MessageErrorCode, PhoneChangeErrorCode } from './error-codes.js';

/**
 * Every error code explained to the people who meet it: what happened and what to do, in each language the
 * dashboard speaks. One catalogue for the dashboard (message log, timeline, overview) and the API docs'
 * error tables (docs/api.md, kept equal to it by docs/test/error-codes.test.ts). The short meanings in
 * error-codes.ts stay what events and webhooks carry as `error_description`; this is the longer word.
 */

export type ErrorCode = MessageErrorCode | PhoneChangeErrorCode;
export type ErrorLanguage = 'en' | 'ru';

export interface ErrorExplanation {
  /** A few words, as a heading: "Nobody with this number". */
  title: string;
  /** What happened, in the customer's words. */
  meaning: string;
  /** What to do about it. */
  action: string;
}

type Catalogue<Code extends string> = Record<Code, Record<ErrorLanguage, ErrorExplanation>>;

/** Why a message failed (the `error_code` of a failed message). */
export const messageErrorCatalogue: Catalogue<MessageErrorCode> = {
  UNKNOWN_BOT: {
    en: {
      title: 'Unknown bot name',
      meaning: "The request's bot_name names no bot of your company for this messenger.",
      action:
        'Use a bot name exactly as the Bots page shows it, or leave bot_name out to send through the default bot.',
    },
    ru: {
      title: 'Неизвестное имя бота',
      meaning: 'bot_name в запросе не совпадает ни с одним ботом вашей компании в этом мессенджере.',
      action:
        'Укажите имя бота точно так, как на странице «Боты», или не передавайте bot_name, чтобы отправить через бота по умолчанию.',
    },
  },
  NO_DEFAULT_BOT: {
    en: {
      title: 'No default bot',
      meaning: 'The request named no bot, and your company has no default bot for this messenger.',
      action: 'Make one of your bots the default on the Bots page, or name the bot in bot_name.',
    },
    ru: {
      title: 'Нет бота по умолчанию',
      meaning: 'В запросе не указан бот, а у вашей компании нет бота по умолчанию в этом мессенджере.',
      action: 'Сделайте одного из ботов основным на странице «Боты» или укажите бота в bot_name.',
    },
  },
  CLIENT_NOT_FOUND: {
    en: {
      title: 'Nobody with this number',
      meaning:
        "Nobody with this phone number has shared it with any of your company's bots, so there is no chat to send to.",
      action:
        'Check the number for typos. Ask the person to open your bot, press Start and share their phone number, then send again.',
    },
    ru: {
      title: 'Нет клиента с этим номером',
      meaning:
        'Никто с этим номером телефона не поделился им ни с одним ботом вашей компании, поэтому писать некуда.',
      action:
        'Проверьте номер на опечатки. Попросите человека открыть вашего бота, нажать «Старт» и поделиться номером телефона, затем отправьте снова.',
    },
  },
  CLIENT_NOT_LINKED_TO_BOT: {
    en: {
      title: 'Not a client of this bot',
      meaning: 'The person is your client, but has not started this bot and shared their contact with it.',
      action:
        'Send through a bot they have started (or leave bot_name out), or ask them to start this bot and share their contact.',
    },
    ru: {
      title: 'Клиент не связан с этим ботом',
      meaning: 'Человек — ваш клиент, но не запускал этого бота и не делился с ним контактом.',
      action:
        'Отправьте через бота, которого он запускал (или не указывайте bot_name), либо попросите его запустить этого бота и поделиться контактом.',
    },
  },
  BOT_BLOCKED_BY_USER: {
    en: {
      title: 'The person blocked the bot',
      meaning: 'The person blocked or stopped your bot: the messenger no longer lets the bot write to them.',
      action:
        'Sending again will not help: only the person can unblock the bot. Reach them another way if the message matters.',
    },
    ru: {
      title: 'Клиент заблокировал бота',
      meaning: 'Человек заблокировал или остановил вашего бота: мессенджер больше не даёт боту ему писать.',
      action:
        'Повторная отправка не поможет: разблокировать бота может только сам человек. Если сообщение важно, свяжитесь с ним иначе.',
    },
  },
  USER_DEACTIVATED: {
    en: {
      title: 'Account deleted',
      meaning: "The person's messenger account is deleted or deactivated.",
      action:
        'Do not send again. Reach the person another way; from a new account they can share their contact again.',
    },
    ru: {
      title: 'Аккаунт удалён',
      meaning: 'Аккаунт человека в мессенджере удалён или деактивирован.',
      action:
        'Не отправляйте повторно. Свяжитесь с человеком иначе; с нового аккаунта он может снова поделиться контактом.',
    },
  },
  CHAT_NOT_FOUND: {
    en: {
      title: 'Chat no longer exists',
      meaning: 'The messenger no longer knows the chat between your bot and the person.',
      action: 'Ask the person to open the bot again and share their contact, then send again.',
    },
    ru: {
      title: 'Чат больше не существует',
      meaning: 'Мессенджер больше не знает чат между вашим ботом и человеком.',
      action: 'Попросите человека снова открыть бота и поделиться контактом, затем отправьте снова.',
    },
  },
  BOT_MISCONFIGURED: {
    en: {
      title: 'Bot token refused',
      meaning:
        "The messenger refused the bot's token (revoked or wrong): every message through this bot fails until it is fixed.",
      action:
        "Get the bot's current token from the messenger (BotFather for Telegram), add the bot again with it on the Bots page, then send again.",
    },
    ru: {
      title: 'Токен бота отклонён',
      meaning:
        'Мессенджер отклонил токен бота (отозван или неверен): все сообщения через этого бота не дойдут, пока это не исправить.',
      action:
        'Получите действующий токен бота в мессенджере (BotFather в Telegram), снова добавьте бота с ним на странице «Боты» и отправьте заново.',
    },
  },
  INVALID_MESSAGE: {
    en: {
      title: 'Content refused',
      meaning:
        "The messenger refused the message's content: for example the text is too long or a button's link is not allowed.",
      action:
        "Check the text's length and the buttons' links (https, a public address), then send it corrected.",
    },
    ru: {
      title: 'Содержимое отклонено',
      meaning:
        'Мессенджер не принял содержимое сообщения: например, текст слишком длинный или ссылка кнопки недопустима.',
      action:
        'Проверьте длину текста и ссылки кнопок (https, общедоступный адрес) и отправьте исправленное сообщение.',
    },
  },
  RATE_LIMITED_PAST_DEADLINE: {
    en: {
      title: 'Too late: rate limits',
      meaning:
        "The messenger's rate limits, or a queue of the bot's earlier messages, kept this message waiting past its delivery deadline.",
      action: 'Spread large sends over time or over several bots. Send again if the message still matters.',
    },
    ru: {
      title: 'Не успело: ограничения скорости',
      meaning:
        'Ограничения скорости мессенджера или очередь прежних сообщений бота задержали это сообщение дольше срока доставки.',
      action:
        'Распределяйте большие рассылки во времени или между несколькими ботами. Отправьте снова, если сообщение ещё актуально.',
    },
  },
  PROVIDER_ERROR: {
    en: {
      title: 'Messenger unavailable',
      meaning:
        'The messenger kept failing (server errors, timeouts, network) until the delivery deadline passed.',
      action: "Usually temporary: send again later. If it lasts, check the messenger's status page.",
    },
    ru: {
      title: 'Мессенджер недоступен',
      meaning: 'Мессенджер отвечал ошибками (ошибки сервера, тайм-ауты, сеть), пока не истёк срок доставки.',
      action:
        'Обычно это временно: отправьте позже. Если не проходит, проверьте страницу статуса мессенджера.',
    },
  },
  DELIVERY_UNCONFIRMED: {
    en: {
      title: 'Delivery not confirmed',
      meaning:
        'The service stopped while the messenger was handling the message: it may have reached the person, and it is not sent again so nobody gets it twice.',
      action: 'If it matters, check with the person; send again only if a duplicate is acceptable.',
    },
    ru: {
      title: 'Доставка не подтверждена',
      meaning:
        'Сервис остановился, пока мессенджер обрабатывал сообщение: оно могло дойти, и повторно не отправляется, чтобы никто не получил его дважды.',
      action: 'Если это важно, уточните у человека; отправляйте снова, только если дубликат допустим.',
    },
  },
  CLIENT_FORGOTTEN: {
    en: {
      title: 'Person forgotten',
      meaning:
        "The person was forgotten (their number and the message's text erased) before the message was delivered.",
      action:
        'Nothing to do: the message is not sent. Once the person shares their contact again, new messages reach them.',
    },
    ru: {
      title: 'Данные клиента удалены',
      meaning:
        'Данные человека удалены (номер и текст сообщения стёрты) до того, как сообщение было доставлено.',
      action:
        'Делать ничего не нужно: сообщение не отправляется. Когда человек снова поделится контактом, новые сообщения до него дойдут.',
    },
  },
  EXPIRED: {
    en: {
      title: 'Expired',
      meaning:
        'The message was not sent by its acceptance time plus its ttl_seconds, so it was dropped: it is never sent afterwards.',
      action:
        'Send it again (with a new ttl_seconds) only if it still matters, or give messages that may wait longer a longer ttl_seconds.',
    },
    ru: {
      title: 'Срок истёк',
      meaning:
        'Сообщение не было отправлено до момента приёма плюс ttl_seconds и отброшено: позже оно не отправляется.',
      action:
        'Отправьте снова (с новым ttl_seconds), только если оно ещё актуально, или задавайте больший ttl_seconds сообщениям, которые могут подождать.',
    },
  },
  CANCELED: {
    en: {
      title: 'Canceled',
      meaning:
        'The message was canceled (POST /api/v1/cancel) before any attempt to send it was made: it was never sent and never will be.',
      action: 'Nothing to do. Send it again if it is wanted after all.',
    },
    ru: {
      title: 'Отменено',
      meaning:
        'Сообщение отменено (POST /api/v1/cancel) до первой попытки отправки: оно не отправлено и не будет отправлено.',
      action: 'Делать ничего не нужно. Если сообщение всё же нужно, отправьте его снова.',
    },
  },
};

/** Why a phone change was refused (change_phone's `error_code`). */
export const phoneChangeErrorCatalogue: Catalogue<PhoneChangeErrorCode> = {
  SAME_PHONE: {
    en: {
      title: 'Same number twice',
      meaning: 'old_phone and new_phone are the same number.',
      action: "Send the person's previous number as old_phone and their new one as new_phone.",
    },
    ru: {
      title: 'Номера совпадают',
      meaning: 'old_phone и new_phone — один и тот же номер.',
      action: 'Передайте прежний номер человека в old_phone, а новый — в new_phone.',
    },
  },
  OLD_PHONE_NOT_FOUND: {
    en: {
      title: 'Old number unknown',
      meaning: 'No client of your company has the number given as old_phone.',
      action:
        'Check old_phone for typos. Someone who never shared a number needs no change: they share the new one with the bot.',
    },
    ru: {
      title: 'Прежний номер не найден',
      meaning: 'Ни у одного клиента вашей компании нет номера, указанного в old_phone.',
      action:
        'Проверьте old_phone на опечатки. Тому, кто не делился номером, менять нечего: он поделится новым номером с ботом.',
    },
  },
  NEW_PHONE_IN_USE: {
    en: {
      title: 'New number taken',
      meaning: 'The number given as new_phone already belongs to another client of your company.',
      action:
        'Check new_phone. If that client is the same person, nothing needs changing: send to the new number.',
    },
    ru: {
      title: 'Новый номер занят',
      meaning: 'Номер, указанный в new_phone, уже принадлежит другому клиенту вашей компании.',
      action:
        'Проверьте new_phone. Если это тот же человек, менять ничего не нужно: отправляйте на новый номер.',
    },
  },
};

/** Every code of both catalogues. */
export const errorCatalogue: Catalogue<ErrorCode> = {
  ...messageErrorCatalogue,
  ...phoneChangeErrorCatalogue,
};

/** The explanation of `code` in `language`; undefined for a code this build does not know. */
export function explainError(code: string, language: ErrorLanguage): ErrorExplanation | undefined {
  return Object.hasOwn(errorCatalogue, code) ? errorCatalogue[code as ErrorCode][language] : undefined;
}
