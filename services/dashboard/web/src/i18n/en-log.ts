/** The English strings of the message log, a message's page and the failure explanations (a part of en.ts). */
export const enLog = {
  'log.find': 'Text or message ID',
  'log.findHint': 'Words of the text, or a whole message ID (event_id)',
  'log.text': 'Text',
  'log.noText': 'text not shown',
  'log.export': 'Export CSV',
  'log.exportHint':
    'The messages this search finds, newest first, as a CSV file: at most {limit, number} rows, with the whole text of each.',
  'log.textWindow':
    'Text is searched among {window, number} messages at a time, newest first. Texts of people who were forgotten, texts this dashboard could not open, and messages older than the log keeps are not found.',
  'log.searchedBackTo': 'Searched back to {at}. “Older” searches the next {window, number} messages.',
  'log.noneById': 'No message with this ID. A phone change or client check has its own page:',
  'log.openTimeline': 'open its timeline',
  'log.error.what': 'What happened',
  'log.error.todo': 'What to do',
  'log.error.code': 'Error code',
  'log.error.messenger': 'Details: {description}',
  'log.failures.explain': 'What it means',
} as const;
