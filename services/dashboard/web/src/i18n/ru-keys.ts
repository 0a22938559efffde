import type { enKeys } from './en-keys.js';

/** Страница ключей: перевыпуск, окончание и журнал запросов (часть ru.ts). */
export const ruKeys: Record<keyof typeof enKeys, string> = {
  'keys.named': '«{label}»',
  'keys.expiresAt': 'до {time}',
  'keys.expired': 'истёк',
  'keys.expiring': 'истекает',
  'keys.rolledFrom': 'вместо {prefix}…',
  'keys.requests': 'Запросы',
  'keys.requestsOf': 'Запросы с ключом {label}',
  'keys.roll': 'Перевыпустить',
  'keys.rollTitle': 'Перевыпуск ключа {label}',
  'keys.rollBody':
    'Будет создан новый ключ с той же меткой и правами; он показывается один раз. Пока вы заменяете старый ключ {prefix}… везде, где он используется, он может ещё поработать:',
  'keys.rollOverlap': 'Старый ключ перестанет работать',
  'keys.overlap.0': 'сразу',
  'keys.overlap.3600': 'через 1 час',
  'keys.overlap.86400': 'через 24 часа',
  'keys.overlap.604800': 'через 7 дней',
  'keys.rollConfirm': 'Перевыпустить',
  'keys.rolled': 'Новый ключ для {label}',
  'keys.oldUntil': 'Старый ключ {prefix}… работает до {time}, затем все запросы с ним будут отклоняться.',
  'keys.oldStopped': 'Старый ключ {prefix}… больше не работает.',
  'keys.actions': 'Действия',
  'requests.intro':
    'Все запросы этого ключа к API, сначала новые; хранятся {days, plural, one {# день} few {# дня} many {# дней} other {# дня}}. Запрос без действующего ключа не относится ни к одному ключу и здесь не показывается.',
  'requests.back': 'Все ключи',
  'requests.none':
    'За последние {days, plural, one {# день} few {# дня} many {# дней} other {# дня}} запросов с этим ключом не было.',
  'requests.at': 'Время',
  'requests.operation': 'Запрос',
  'requests.status': 'Ответ',
  'requests.eventId': 'Идентификатор события',
  'requests.requestId': 'Идентификатор запроса',
  'requests.duration': 'Длительность',
  'requests.ms': '{ms, number} мс',
  'requests.more': 'Более ранние запросы',
  'requests.op.send': 'Отправка сообщения',
  'requests.op.change_phone': 'Смена номера',
  'requests.op.client_check': 'Проверка клиента',
  'requests.op.read_event': 'Чтение состояния',
  'requests.notFound': 'В вашей компании нет такого ключа.',
} as const;
