/** A secret sealed with AES-256-GCM, as stored in the account document (base64 fields). */
export interface SealedSecret {
  keyId: string;
  nonce: string;
  ciphertext: string;
  /** 1: bound to its owner by associated data; absent or 0: sealed before owners were bound. */
  format?: number;
}

/** A sealed secret as events carry it (bytes). */
export interface EventSealedSecret {
  keyId: string;
  nonce: Buffer;
  ciphertext: Buffer;
  format?: number;
}

export const sealed = (s: SealedSecret): EventSealedSecret & { format: number } => ({
  keyId: s.keyId,
  nonce: Buffer.from(s.nonce, 'base64'),
  ciphertext: Buffer.from(s.ciphertext, 'base64'),
  format: s.format ?? 0,
});

export const unsealed = (s: EventSealedSecret | undefined): SealedSecret => ({
  keyId: s?.keyId ?? '',
  nonce: Buffer.from(s?.nonce ?? []).toString('base64'),
  ciphertext: Buffer.from(s?.ciphertext ?? []).toString('base64'),
  ...(s?.format ? { format: s.format } : {}),
});
