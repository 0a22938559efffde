import type { Accounts } from './accounts.js';

export interface ResealReport {
  /** The key everything is sealed under now. */
  keyId: string;
  companies: number;
  /** Secrets sealed again (older key, or not yet bound to their owner). */
  botTokens: number;
  webhookSecrets: number;
  /** People's keys (and the subject secret) sealed again (docs/personal-data.md). */
  personKeys: number;
  /** Companies whose secrets could not be opened (a key missing from the keyring), with why. */
  failed: { companyId: string; error: string }[];
}

/**
 * Seals every company's stored secrets again under the current encryption key, bound to their owners:
 * after it reports no failures, keys other than the current one can be dropped from
 * REGISTRY_ENCRYPTION_KEYS. Safe to run again (what is current is left alone) and alongside live traffic
 * (each company is resealed in its own transaction under its lock).
 */
export async function resealAllSecrets(
  accounts: Pick<Accounts, 'currentKeyId' | 'listAccounts' | 'resealCompany'>,
  resealPersonKeys: () => Promise<number>,
): Promise<ResealReport> {
  const report: ResealReport = {
    keyId: accounts.currentKeyId,
    companies: 0,
    botTokens: 0,
    webhookSecrets: 0,
    personKeys: 0,
    failed: [],
  };
  try {
    report.personKeys = await resealPersonKeys();
  } catch (error) {
    report.failed.push({
      companyId: '(person keys)',
      error: error instanceof Error ? error.message : String(error),
    });
  }
  for (const { companyId } of await accounts.listAccounts()) {
    try {
      const count = await accounts.resealCompany(companyId);
      report.botTokens += count.botTokens;
      report.webhookSecrets += count.webhookSecrets;
      report.companies++;
    } catch (error) {
      report.failed.push({ companyId, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return report;
}
