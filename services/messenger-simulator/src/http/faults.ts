import type { Response } from 'express';
import type { Timers } from '../delivery/timers.js';
import type { Fault } from '../domain/faults.js';
import { hostileAnswer } from '../domain/hostile.js';
import type { Messenger } from '../domain/types.js';

export interface FaultAnswers {
  serverError(status: number | undefined): void;
  tooManyRequests(retryAfter: number): void;
  /** Answers the call with the bytes of a hostile error (hostile.ts), written as they are. */
  hostileError(fault: Fault): void;
}

/**
 * Acts out a scripted fault. Latency delays the call and lets it go on (returns false); the others
 * answer it (returns true). A "timeout" holds the call without answering, then drops the connection. A
 * "drop-after-delivery" lets the call go on and drops the connection instead of its answer.
 */
export async function actOutFault(
  fault: Fault,
  res: Response,
  timers: Timers,
  answers: FaultAnswers,
): Promise<boolean> {
  switch (fault.kind) {
    case 'latency':
      await timers.sleep(fault.ms ?? 1000);
      return false;
    case 'drop-after-delivery':
      res.writeHead = (() => res) as never;
      res.end = (() => {
        res.req.socket.destroy();
        return res;
      }) as never;
      return false;
    case 'timeout':
      await new Promise<void>((resolve) => {
        const cancel = timers.after(fault.ms ?? 60_000, resolve);
        res.once('close', () => {
          cancel();
          resolve();
        });
      });
      res.req.socket.destroy();
      return true;
    case '5xx':
      answers.serverError(fault.status);
      return true;
    case '429':
      answers.tooManyRequests(fault.retryAfter ?? 5);
      return true;
    case 'hostile-error':
      answers.hostileError(fault);
      return true;
  }
}

/** A hostile-error fault's answer for `messenger`: its status (400 unless the fault says), bytes and summary. */
export function hostileErrorOf(
  messenger: Messenger,
  fault: Fault,
): { status: number; body: Uint8Array; summary: string } {
  const status = fault.status ?? 400;
  return { status, ...hostileAnswer(messenger, fault.hostile ?? 'controls', status, fault.size) };
}
