import { PasswordInput, type PasswordInputProps } from '@mantine/core';
import { useState } from 'react';
import { useT } from '../i18n/locale.js';

/**
 * A password (or another secret) field whose show/hide button says what it does, in the app's language: Mantine's
 * own button has no accessible name of ours.
 */
export function PasswordField(props: PasswordInputProps & { 'data-testid'?: string }) {
  const t = useT();
  const [visible, setVisible] = useState(false);
  return (
    <PasswordInput
      {...props}
      visible={visible}
      onVisibilityChange={setVisible}
      visibilityToggleButtonProps={{
        'aria-label': visible ? t('password.hide') : t('password.show'),
        'data-testid': props['data-testid'] ? `${props['data-testid']}-visibility` : undefined,
      }}
    />
  );
}
