import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { webRouter } from './web.js';

const root = mkdtempSync(join(tmpdir(), 'dashboard-web-'));
writeFileSync(join(root, 'index.html'), '<!doctype html><title>dashboard</title>');
const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  rmSync(root, { recursive: true, force: true });
});

/** The headers of a page of the web application, served with `hsts` as the dashboard's settings say. */
async function pageHeaders(hsts: boolean): Promise<Headers> {
  const app = express().use(webRouter(root, { hsts }));
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  servers.push(server);
  const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/messages`);
  expect(response.status).toBe(200);
  return response.headers;
}

describe('the web application', () => {
  it('says Strict-Transport-Security when it is served over https (secure cookies), for a year', async () => {
    expect((await pageHeaders(true)).get('strict-transport-security')).toBe('max-age=31536000');
  });

  it('says nothing of the kind over plain http, and keeps its other headers either way', async () => {
    const headers = await pageHeaders(false);
    expect(headers.get('strict-transport-security')).toBeNull();
    expect(headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });
});
