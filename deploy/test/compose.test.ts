import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { root } from './support.js';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; args: Record<string, string> };
  environment?: Record<string, string>;
  ports?: string[];
}

// compose.yaml is not run here (the containers test runs it with podman-compose where there is podman): parsed.
const compose = parse(readFileSync(join(root, 'compose.yaml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};

function declaredPorts(service: string): number[] {
  const manifest = JSON.parse(readFileSync(join(root, 'services', service, 'package.json'), 'utf8')) as {
    mds: { image: { ports: number[] } };
  };
  return manifest.mds.image.ports;
}

describe('compose.yaml', () => {
  const ours = Object.entries(compose.services).filter(([, s]) => s.image?.startsWith('mds/'));

  it('builds each service image from the one Dockerfile, with the build arguments npm run image passes', () => {
    const built = ours.filter(([, s]) => s.build);
    // The sender's image once (services/sender), run once per messenger.
    expect(built.map(([, s]) => s.build!.args.SERVICE).sort()).toEqual([
      'client-registry',
      'gateway',
      'messenger-simulator',
      'sender',
      'webhook-dispatcher',
    ]);
    for (const [name, service] of built) {
      const workspace = service.build!.args.SERVICE!;
      expect(service.image, name).toBe(`mds/${workspace}:\${MDS_TAG:-dev}`);
      const ports = declaredPorts(workspace);
      expect(service.build, name).toEqual({
        context: '.',
        dockerfile: 'Dockerfile',
        args: { SERVICE: workspace, HTTP_PORT: String(ports[0]), PORTS: ports.join(' ') },
      });
      if (service.environment?.HTTP_PORT) expect(service.environment.HTTP_PORT, name).toBe(String(ports[0]));
    }
  });

  it('runs a sender per built-in messenger, each on its own port of the sender image', () => {
    const senders = ours.filter(([, s]) => s.image === 'mds/sender:${MDS_TAG:-dev}');
    expect(senders.map(([name]) => name).sort()).toEqual(['max-sender', 'telegram-sender']);
    const ports = senders.map(([, s]) => Number(s.environment?.HTTP_PORT));
    for (const port of ports) expect(declaredPorts('sender')).toContain(port);
    expect(new Set(ports).size).toBe(senders.length);
    expect(senders.map(([, s]) => s.environment?.MESSENGER).sort()).toEqual(['max', 'telegram']);
  });

  it('reuses a built image where a step runs one (the demo, a second sender), rather than building another', () => {
    const images = new Set(ours.filter(([, s]) => s.build).map(([, s]) => s.image));
    for (const [name, service] of ours.filter(([, s]) => !s.build))
      expect(images, name).toContain(service.image);
  });
});
