import type { enLog } from './en-log.js';

/** Русские строки журнала сообщений, страницы сообщения и объяснений ошибок (часть ru.ts). */
export const ruLog: Record<keyof typeof enLog, string> = {
  'log.find': 'Текст или ID сообщения',
  'log.findHint': 'Слова из текста или ID сообщения целиком (event_id)',
  'log.text': 'Текст',
  'log.noText': 'текст не показан',
  'log.export': 'Выгрузить CSV',
  'log.exportHint':
    'Найденные сообщения, сначала новые, файлом CSV: не больше {limit, number} строк, с полным текстом каждого.',
  'log.textWindow':
    'Текст ищется среди {window, number} сообщений за раз, начиная с новых. Тексты забытых людей, тексты, которые панель не смогла открыть, и сообщения старше срока хранения журнала не находятся.',
  'log.searchedBackTo': 'Просмотрено до {at}. «Старее» ищет в следующих {window, number} сообщениях.',
  'log.noneById': 'Сообщения с таким ID нет. У смены номера и проверки клиента своя страница:',
  'log.openTimeline': 'открыть её историю',
  'log.error.what': 'Что произошло',
  'log.error.todo': 'Что делать',
  'log.error.code': 'Код ошибки',
  'log.error.messenger': 'Подробности: {description}',
  'log.failures.explain': 'Что это значит',
};
