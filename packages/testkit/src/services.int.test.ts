import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRegistry, startSimulator, type RegistryProcess, type SimulatorProcess } from './services.js';

const ADMIN_TOKEN = 'testkit-admin-token';

describe('the messenger simulator and client-registry as processes of their builds', () => {
  let simulator: SimulatorProcess;
  let registry: RegistryProcess;

  beforeAll(async () => {
    simulator = await startSimulator();
    registry = await startRegistry({
      adminToken: ADMIN_TOKEN,
      internalToken: 'testkit-internal-token',
      simulatorUrl: simulator.url,
    });
  });
  afterAll(async () => {
    await registry?.stop();
    await simulator?.close();
  });

  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${registry.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('answers on the ports it was given, with the settings it was given', async () => {
    expect((await fetch(`${simulator.url}/control/bots`)).status).toBe(200);
    expect((await admin('GET', '/companies')).status).toBe(200);
    const refused = await fetch(`${registry.url}/admin/v1/companies`, {
      headers: { authorization: 'Bearer not-the-token' },
    });
    expect(refused.status).toBe(401);
    expect(registry.grpc).toBe(`127.0.0.1:${registry.grpcPort}`);
  });

  it('starts again on the same ports, database and topics, with changed settings', async () => {
    const created = (await (await admin('POST', '/companies', { name: 'Kept' })).json()) as {
      company_id: string;
    };
    const url = registry.url;
    await registry.restart({ REGISTRY_ADMIN_TOKEN: 'testkit-admin-token-2' });
    expect(registry.url).toBe(url);
    expect((await admin('GET', `/companies/${created.company_id}`)).status).toBe(401);
    const kept = await fetch(`${registry.url}/admin/v1/companies/${created.company_id}`, {
      headers: { authorization: 'Bearer testkit-admin-token-2' },
    });
    expect(kept.status).toBe(200);
    expect(((await kept.json()) as { name: string }).name).toBe('Kept');
  });

  it('stops: nothing answers where it listened', async () => {
    await simulator.close();
    await expect(fetch(`${simulator.url}/control/bots`)).rejects.toThrow();
  });
});
