import { messengers } from '@mds/contracts/messengers';

/** The messengers of the catalogue as a select's or a segmented control's choices: name, shown by its label. */
export const messengerChoices = (): { value: string; label: string }[] =>
  messengers().map((m) => ({ value: m.name, label: m.label }));

/** The messenger a form starts with: the catalogue's first. */
export const firstMessenger = (): string => messengers()[0]!.name;
