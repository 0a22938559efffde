import { metadataEntries, SealedPersonalData } from '@mds/contracts';
import type { EventState } from '@mds/message-state';
import { openSealed, type PersonKeyPort } from '@mds/personal-data';

/**
 * A state as the read API shows it: the number of a client check, or the two numbers of a change_phone, and
 * the request's metadata, opened with their person's key (the read model keeps them sealed). A forgotten person's numbers read as
 * empty. States written before sealing existed hold them in plain text and come back as they are.
 */
export async function openSealedResult(
  keys: PersonKeyPort,
  state: EventState | undefined,
): Promise<EventState | undefined> {
  return state && openSealedMetadata(keys, await openResult(keys, state));
}

/** The request's metadata opened (the read model keeps it sealed); a forgotten person's reads as `{}`. */
async function openSealedMetadata(keys: PersonKeyPort, state: EventState): Promise<EventState> {
  const metadata = state.metadata;
  if (!metadata?.sealed) return state;
  const opened = await openSealed(keys, state.companyId, SealedPersonalData.fromJSON(metadata.sealed));
  return { ...state, metadata: { values: metadataEntries(opened?.requestMetadata) ?? {} } };
}

async function openResult(keys: PersonKeyPort, state: EventState): Promise<EventState> {
  const result = state.result;
  if (!result || !('sealed' in result) || !result.sealed) return state;
  if ('oldPhone' in result) {
    if (result.oldPhone) return state;
    const opened = await openSealed(keys, state.companyId, SealedPersonalData.fromJSON(result.sealed));
    return {
      ...state,
      result: { ...result, oldPhone: opened?.phoneNumber ?? '', newPhone: opened?.newPhoneNumber ?? '' },
    };
  }
  if (result.phoneNumber) return state;
  const opened = await openSealed(keys, state.companyId, SealedPersonalData.fromJSON(result.sealed));
  return { ...state, result: { ...result, phoneNumber: opened?.phoneNumber ?? '' } };
}
