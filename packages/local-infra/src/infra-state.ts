// What a named run records of the processes it started (state.json in its folder), and the folders of
// its data: read and written by startInfra/stopInfra and by the drills' node operations.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KafkaNodeAddress } from './kafka-broker.js';
import { removePostgresDataElsewhere } from './postgres.js';
import { canConnect, freePort } from './processes.js';
import { runDir } from './paths.js';

export interface ProcessRecord {
  pid: number;
  /** Set when started by this project's scripts, so stop knows it is ours to stop. */
  startedAt: string;
}

/** One Kafka node as recorded. */
export interface KafkaNodeRecord extends ProcessRecord, KafkaNodeAddress {
  logFile: string;
}

export interface KafkaRecord {
  brokers: string;
  version: string;
  /** Absent in states written before it was recorded: the default then. */
  heapMb?: number;
  /** Absent in states written before clusters: one node then, described by the fields below. */
  nodes?: KafkaNodeRecord[];
  pid?: number;
  startedAt?: string;
  logFile?: string;
  controllerPort?: number;
}

export interface InfraState {
  kafka?: KafkaRecord;
  postgres?: ProcessRecord & { databaseUrl: string; version: string; logFile: string; fast?: boolean };
}

/** The recorded nodes, also of a state written before clusters (one node, id 1). */
export function nodesOf(kafka: KafkaRecord): KafkaNodeRecord[] {
  if (kafka.nodes) return kafka.nodes;
  return [
    {
      nodeId: 1,
      pid: kafka.pid!,
      startedAt: kafka.startedAt!,
      port: Number(kafka.brokers.split(':')[1]),
      controllerPort: kafka.controllerPort!,
      logFile: kafka.logFile!,
    },
  ];
}

/** A node's folder: `kafka` when it runs alone (as before clusters), `kafka-<id>` in a cluster. */
export function nodeDir(runFolder: string, nodes: number, nodeId: number): string {
  return join(runFolder, nodes === 1 ? 'kafka' : `kafka-${nodeId}`);
}

function stateFile(name: string, env: NodeJS.ProcessEnv): string {
  return join(runDir(name, env), 'state.json');
}

export function readState(name: string, env: NodeJS.ProcessEnv): InfraState {
  const file = stateFile(name, env);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as InfraState) : {};
}

export function writeState(name: string, env: NodeJS.ProcessEnv, state: InfraState): void {
  writeFileSync(stateFile(name, env), JSON.stringify(state, null, 2));
}

export async function portOrFree(preferred: number | undefined): Promise<number> {
  if (preferred !== undefined && !(await canConnect(preferred))) return preferred;
  return freePort();
}

/** Removes a run's folder, and its PostgreSQL data if that had to live elsewhere. */
export function removeRunDir(dir: string): void {
  removePostgresDataElsewhere(join(dir, 'postgres'));
  rmSync(dir, { recursive: true, force: true });
}
