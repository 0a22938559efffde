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
    expect(built.map(([name]) => name).sort()).toEqual([
      'client-registry',
      'gateway',
      'max-sender',
      'messenger-simulator',
      'telegram-sender',
      'webhook-dispatcher',
    ]);
    for (const [name, service] of built) {
      expect(service.image, name).toBe(`mds/${name}:\${MDS_TAG:-dev}`);
      const ports = declaredPorts(name);
      expect(service.build, name).toEqual({
        context: '.',
        dockerfile: 'Dockerfile',
        args: { SERVICE: name, HTTP_PORT: String(ports[0]), PORTS: ports.join(' ') },
      });
      if (service.environment?.HTTP_PORT) expect(service.environment.HTTP_PORT, name).toBe(String(ports[0]));
    }
  });

  it('reuses a built image where a step runs one (the demo), rather than building another', () => {
    const images = new Set(ours.filter(([, s]) => s.build).map(([, s]) => s.image));
    for (const [name, service] of ours.filter(([, s]) => !s.build))
      expect(images, name).toContain(service.image);
  });
});
