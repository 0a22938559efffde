import { PasswordInput } from '@mantine/core';
import { useT } from '../i18n/locale.js';

/** One of the company's API keys, pasted (keys are shown once, so the dashboard never has them). */
export function ApiKeyInput({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const t = useT();
  return (
    <PasswordInput
      label={t('send.apiKey')}
      description={t('send.apiKeyHint')}
      required
      autoComplete="off"
      value={value}
      onChange={(e) => onChange(e.currentTarget.value.trim())}
      data-testid="api-key"
    />
  );
}
