import { TextInput, type TextInputProps } from '@mantine/core';
import { useT } from '../i18n/locale.js';

/**
 * A person's phone number: a greyed pattern as its placeholder (zeros, so it never reads as a number already
 * filled in) and a description saying the format, in the app's language.
 */
export function PhoneInput(props: Omit<TextInputProps, 'placeholder' | 'inputMode' | 'type'>) {
  const t = useT();
  return (
    <TextInput
      type="tel"
      inputMode="tel"
      autoComplete="off"
      placeholder={t('phone.placeholder')}
      description={t('phone.hint')}
      {...props}
    />
  );
}
