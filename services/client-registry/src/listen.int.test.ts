import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRegistryStack, type RegistryStack } from '../test/support.js';

// Told to listen on loopback (HTTP_HOST=127.0.0.1, as npm start and the tests say), the registry's gRPC port
// listens there too unless GRPC_HOST says otherwise: nothing of the machine's other addresses reaches it.

let stack: RegistryStack;

beforeAll(async () => {
  stack = await startRegistryStack({ GRPC_HOST: undefined });
}, 60_000);
afterAll(() => stack?.stop());

const reaches = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });

it("listens for gRPC on HTTP_HOST's address when GRPC_HOST is unset: loopback, not the machine's other addresses", async () => {
  const port = Number(stack.grpc.split(':')[1]);
  expect(await reaches('127.0.0.1', port)).toBe(true);
  const others = Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && !a.internal && a.family === 'IPv4')
    .map((a) => a!.address);
  // A machine with no address but loopback has nothing more to show.
  for (const address of others) expect(await reaches(address, port), address).toBe(false);
});
