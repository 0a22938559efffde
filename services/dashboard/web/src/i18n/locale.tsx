import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { DatesProvider } from '@mantine/dates';
import 'dayjs/locale/ru';
import { IntlProvider, useIntl } from 'react-intl';
import { en, type MessageKey } from './en.js';
import { ru } from './ru.js';

/** Every string of the dashboard comes from one catalogue per language, with the same keys. */
export const CATALOGUES = { en, ru } as const;
export type Locale = keyof typeof CATALOGUES;
export const LOCALES: Locale[] = ['en', 'ru'];
const STORED = 'mds.dashboard.locale';

/** The person's choice if they made one here, else the first of the browser's languages we speak. */
export function initialLocale(): Locale {
  const stored = localStorage.getItem(STORED);
  if (stored === 'en' || stored === 'ru') return stored;
  for (const language of navigator.languages ?? [navigator.language]) {
    const base = language.toLowerCase().split('-')[0];
    if (base === 'ru' || base === 'en') return base;
  }
  return 'en';
}

const LocaleContext = createContext<{ locale: Locale; setLocale: (l: Locale) => void }>({
  locale: 'en',
  setLocale: () => undefined,
});

export function LocaleProvider({ children }: { children: ReactNode }) {
  const [locale, setLocaleState] = useState<Locale>(initialLocale);
  const setLocale = useCallback((l: Locale) => {
    localStorage.setItem(STORED, l);
    setLocaleState(l);
  }, []);
  useEffect(() => {
    document.documentElement.lang = locale;
  }, [locale]);
  const value = useMemo(() => ({ locale, setLocale }), [locale, setLocale]);
  return (
    <LocaleContext.Provider value={value}>
      <IntlProvider locale={locale} messages={CATALOGUES[locale]} defaultLocale="en">
        {/* Pickers and calendars (@mantine/dates, dayjs) in the app's language, Monday first in Russian. */}
        <DatesProvider settings={{ locale, firstDayOfWeek: locale === 'ru' ? 1 : 0 }}>
          {children}
        </DatesProvider>
      </IntlProvider>
    </LocaleContext.Provider>
  );
}

export const useLocale = () => useContext(LocaleContext);

type Values = Record<string, string | number | boolean | Date | null | undefined>;

/** The translate function, and the locale's formatting of dates, numbers and durations. */
export function useT() {
  const intl = useIntl();
  return useMemo(() => {
    const t = (id: MessageKey, values?: Values) => intl.formatMessage({ id }, values as never);
    return Object.assign(t, {
      date: (value: string | Date | null | undefined) =>
        value ? intl.formatDate(value, { dateStyle: 'medium', timeStyle: 'medium' }) : '—',
      time: (value: string | Date) =>
        intl.formatTime(value, { hour: '2-digit', minute: '2-digit', second: '2-digit' }),
      number: (value: number) => intl.formatNumber(value),
      percent: (value: number) => intl.formatNumber(value, { style: 'percent', maximumFractionDigits: 1 }),
      ms: (value: number | null | undefined) =>
        value === null || value === undefined
          ? '—'
          : value < 1000
            ? intl.formatNumber(value, { style: 'unit', unit: 'millisecond', unitDisplay: 'short' })
            : intl.formatNumber(value / 1000, {
                style: 'unit',
                unit: 'second',
                unitDisplay: 'short',
                maximumFractionDigits: 1,
              }),
      /** A span of time in its largest whole unit: "45 sec", "4 min", "2 hr". */
      duration: (seconds: number) => {
        const [value, unit] =
          seconds < 60
            ? [seconds, 'second']
            : seconds < 3600
              ? [Math.floor(seconds / 60), 'minute']
              : seconds < 86_400
                ? [Math.floor(seconds / 3600), 'hour']
                : [Math.floor(seconds / 86_400), 'day'];
        return intl.formatNumber(value, { style: 'unit', unit, unitDisplay: 'short' });
      },
      ago: (value: string | Date | null | undefined) => {
        if (!value) return t('common.never');
        const seconds = Math.round((new Date(value).getTime() - Date.now()) / 1000);
        const abs = Math.abs(seconds);
        if (abs < 60) return intl.formatRelativeTime(seconds, 'second', { numeric: 'auto' });
        if (abs < 3600) return intl.formatRelativeTime(Math.round(seconds / 60), 'minute');
        if (abs < 86_400) return intl.formatRelativeTime(Math.round(seconds / 3600), 'hour');
        return intl.formatRelativeTime(Math.round(seconds / 86_400), 'day');
      },
    });
  }, [intl]);
}

export type Translate = ReturnType<typeof useT>;
