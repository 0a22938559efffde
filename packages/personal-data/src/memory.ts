import type { PersonKeyPort } from './keys.js';
import { newPersonKeyMaterial, subjectIdOf, type PersonKey } from './seal.js';

/**
 * Person keys in memory, kept as client-registry keeps them (one per company and number, a new one after a
 * forget): for unit tests and tests of one service without the registry.
 */
export function memoryPersonKeys(secret = 'memory-subject-secret') {
  const byId = new Map<string, PersonKey & { companyId: string }>();
  const calls = { obtain: 0, get: 0 };
  let next = 0;
  const port: PersonKeyPort & { forget(companyId: string, phone: string): void } = {
    obtain(companyId, phone) {
      calls.obtain += 1;
      const subjectId = subjectIdOf(secret, companyId, phone);
      const found = [...byId.values()].find((k) => k.companyId === companyId && k.subjectId === subjectId);
      if (found) return Promise.resolve(found);
      next += 1;
      const key = { companyId, subjectId, keyId: `key-${next}`, key: newPersonKeyMaterial() };
      byId.set(key.keyId, key);
      return Promise.resolve(key);
    },
    get(companyId, keyId) {
      calls.get += 1;
      const key = byId.get(keyId);
      return Promise.resolve(key && key.companyId === companyId ? key : 'erased');
    },
    forget(companyId, phone) {
      const subjectId = subjectIdOf(secret, companyId, phone);
      for (const [id, k] of byId) if (k.companyId === companyId && k.subjectId === subjectId) byId.delete(id);
    },
  };
  return { port, calls };
}
