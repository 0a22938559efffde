import type { RequestMetadata } from './gen/mds/events/v1/common.js';

/** The keys and values of a request's `metadata`, or undefined when it carried none (`{}` is none). */
export function metadataEntries(metadata: RequestMetadata | undefined): Record<string, string> | undefined {
  return metadata && Object.keys(metadata.entries).length > 0 ? metadata.entries : undefined;
}

/** A request body's `metadata` as its event carries it: unset for none. */
export function metadataField(metadata: Record<string, string> | undefined): RequestMetadata | undefined {
  return metadata && Object.keys(metadata).length > 0 ? { entries: metadata } : undefined;
}
