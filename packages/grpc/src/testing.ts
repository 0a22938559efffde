import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throw-away CA and certificates it signs, made with the openssl CLI in a temporary directory. */
export interface TestCa {
  dir: string;
  caFile: string;
  /** Issues a certificate (EC P-256) for `name`, valid for localhost and 127.0.0.1; returns its files. */
  issue(name: string): { certFile: string; keyFile: string };
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
}

export function createTestCa(label: string, dir = mkdtempSync(join(tmpdir(), `mds-ca-${label}-`))): TestCa {
  const caKey = join(dir, `${label}-ca.key`);
  const caFile = join(dir, `${label}-ca.crt`);
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', caKey], dir);
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      caKey,
      '-sha256',
      '-days',
      '2',
      '-subj',
      `/CN=${label} test CA`,
      '-out',
      caFile,
    ],
    dir,
  );
  let serial = 0;
  return {
    dir,
    caFile,
    issue(name) {
      serial++;
      const keyFile = join(dir, `${label}-${name}-${serial}.key`);
      const csr = join(dir, `${label}-${name}-${serial}.csr`);
      const certFile = join(dir, `${label}-${name}-${serial}.crt`);
      const ext = join(dir, `${label}-${name}-${serial}.ext`);
      execFileSync('sh', [
        '-c',
        `printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > '${ext}'`,
      ]);
      openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile], dir);
      openssl(['req', '-new', '-key', keyFile, '-subj', `/CN=${name}`, '-out', csr], dir);
      openssl(
        [
          'x509',
          '-req',
          '-in',
          csr,
          '-CA',
          caFile,
          '-CAkey',
          caKey,
          '-set_serial',
          String(Date.now() + serial),
          '-days',
          '2',
          '-sha256',
          '-extfile',
          ext,
          '-out',
          certFile,
        ],
        dir,
      );
      return { certFile, keyFile };
    },
  };
}
