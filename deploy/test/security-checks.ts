// Checks of what the chart renders for least privilege: a Strimzi KafkaUser's shape (it has no published model
// here) and its ACLs against the topic ownership table, and the NetworkPolicy of a release.
import { allTopics } from '@mds/contracts';
import type { Manifest } from './support.js';

const RESOURCE_TYPES = ['topic', 'group', 'cluster', 'transactionalId'];
const PATTERN_TYPES = ['literal', 'prefix'];
const OPERATIONS = [
  'Read',
  'Write',
  'Create',
  'Delete',
  'Alter',
  'Describe',
  'ClusterAction',
  'AlterConfigs',
  'DescribeConfigs',
  'IdempotentWrite',
  'All',
];

export interface KafkaAcl {
  resource: { type: string; name?: string; patternType?: string };
  operations: string[];
  host?: string;
  type?: 'allow' | 'deny';
}

interface KafkaUser extends Manifest {
  metadata: Manifest['metadata'] & { namespace?: string };
  spec?: {
    authentication?: { type?: string };
    authorization?: { type?: string; acls?: KafkaAcl[] };
  };
}

/** A KafkaUser (kafka.strimzi.io/v1beta2) against the fields and values Strimzi's CRD allows. */
export function kafkaUserProblems(manifest: Manifest): string[] {
  const user = manifest as KafkaUser;
  const where = `KafkaUser ${user.metadata.name}`;
  const problems: string[] = [];
  if (!user.metadata.namespace) problems.push(`${where}: no namespace (the User Operator watches one)`);
  if (!user.metadata.labels?.['strimzi.io/cluster']) problems.push(`${where}: no strimzi.io/cluster label`);
  const known = new Set(['authentication', 'authorization', 'quotas', 'template']);
  for (const key of Object.keys(user.spec ?? {})) {
    if (!known.has(key)) problems.push(`${where}: unknown field spec.${key}`);
  }
  if (!['tls', 'tls-external', 'scram-sha-512'].includes(user.spec?.authentication?.type ?? '')) {
    problems.push(`${where}: spec.authentication.type is not tls, tls-external or scram-sha-512`);
  }
  if (user.spec?.authorization?.type !== 'simple')
    problems.push(`${where}: spec.authorization.type is not simple`);
  for (const [i, acl] of (user.spec?.authorization?.acls ?? []).entries()) {
    const at = `${where}: acls[${i}]`;
    if (!RESOURCE_TYPES.includes(acl.resource?.type))
      problems.push(`${at}: resource.type ${acl.resource?.type}`);
    if (acl.resource?.type !== 'cluster' && !acl.resource?.name)
      problems.push(`${at}: resource.name is required`);
    if (acl.resource?.patternType && !PATTERN_TYPES.includes(acl.resource.patternType)) {
      problems.push(`${at}: resource.patternType ${acl.resource.patternType}`);
    }
    if (!Array.isArray(acl.operations) || acl.operations.length === 0) problems.push(`${at}: no operations`);
    for (const op of acl.operations ?? [])
      if (!OPERATIONS.includes(op)) problems.push(`${at}: operation ${op}`);
  }
  return problems;
}

/** The services named in an owner description of topics.ts ("telegram-sender, max-sender (...); client-registry"). */
function ownersIn(description: string, services: readonly string[]): string[] {
  return services.filter((s) => new RegExp(`(^|[^a-z-])${s}($|[^a-z-])`).test(description));
}

/** What the ownership table grants a service: Write on the topics it owns events of, Read on those it reads. */
export function expectedAccess(
  service: string,
  services: readonly string[],
): { writes: string[]; reads: string[] } {
  const all = allTopics();
  return {
    writes: all
      .filter((t) => Object.values(t.owners).some((d) => ownersIn(d, services).includes(service)))
      .map((t) => t.name)
      .sort(),
    reads: all
      .filter((t) => t.readers.includes(service))
      .map((t) => t.name)
      .sort(),
  };
}

/** The rules of a rendered KafkaUser, as comparable strings: "<type>:<pattern>:<name> <Op>" per operation. */
export function aclRules(user: Manifest): string[] {
  const acls = (user as KafkaUser).spec?.authorization?.acls ?? [];
  return acls
    .flatMap((acl) =>
      acl.operations.map(
        (op) =>
          `${acl.resource.type}:${acl.resource.patternType ?? 'literal'}:${acl.resource.name ?? '*'} ${op}`,
      ),
    )
    .sort();
}

/**
 * The rules a release's KafkaUser must have, exactly: from the ownership table, nothing more. The service's own
 * user uses its topics (Write or Read, and Describe) and its groups; the deploy step's creates and configures
 * those topics (Create, AlterConfigs, Describe) and does nothing else.
 */
export function expectedAclRules(
  service: string,
  services: readonly string[],
  topicPrefix: string,
  role: 'service' | 'deploy-step' = 'service',
): string[] {
  const { writes, reads } = expectedAccess(service, services);
  const topic = (name: string) => `topic:literal:${topicPrefix}${name}`;
  if (role === 'deploy-step') {
    return [...new Set([...writes, ...reads])]
      .flatMap((t) => [`${topic(t)} Create`, `${topic(t)} AlterConfigs`, `${topic(t)} Describe`])
      .sort();
  }
  return [
    ...writes.flatMap((t) => [`${topic(t)} Write`, `${topic(t)} Describe`]),
    ...reads.flatMap((t) => [`${topic(t)} Read`, `${topic(t)} Describe`]),
    ...(reads.length
      ? [`group:prefix:${topicPrefix}${service} Read`, `group:prefix:${topicPrefix}${service} Describe`]
      : []),
    ...(writes.length ? ['cluster:literal:* IdempotentWrite'] : []),
  ].sort();
}
