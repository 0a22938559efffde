import { DateTimePicker } from '@mantine/dates';
import dayjs from 'dayjs';
import { useT } from '../i18n/locale.js';

/**
 * A date and time in the person's time zone, written and picked the app's way (its language's month names and
 * its order of day, month and year), whatever language the browser speaks: a native date input follows the
 * browser, not the app. Holds an ISO 8601 instant ('' for none).
 */
export function DateTimeField(o: {
  label: string;
  description?: string;
  value: string;
  onChange: (iso: string) => void;
  'data-testid'?: string;
}) {
  const t = useT();
  return (
    <DateTimePicker
      label={o.label}
      description={o.description}
      clearable
      valueFormat={t('dates.inputFormat')}
      placeholder={t('dates.placeholder')}
      value={o.value ? dayjs(o.value).format('YYYY-MM-DD HH:mm:ss') : null}
      onChange={(local) => o.onChange(local ? dayjs(local).toISOString() : '')}
      clearButtonProps={{ 'aria-label': t('dates.clear') }}
      submitButtonProps={{ 'aria-label': t('dates.done') }}
      data-testid={o['data-testid']}
    />
  );
}
