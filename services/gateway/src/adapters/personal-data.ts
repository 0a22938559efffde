import { SealedPersonalData } from '@mds/contracts';
import type { EventState } from '@mds/message-state';
import { openSealed, type PersonKeyPort } from '@mds/personal-data';

/**
 * A state as the read API shows it: the number of a client check opened with its person's key (the read
 * model keeps it sealed). A forgotten person's number reads as empty.
 */
export async function openSealedResult(
  keys: PersonKeyPort,
  state: EventState | undefined,
): Promise<EventState | undefined> {
  const result = state?.result;
  if (!state || !result || !('sealed' in result) || !result.sealed || result.phoneNumber) return state;
  const opened = await openSealed(keys, state.companyId, SealedPersonalData.fromJSON(result.sealed));
  return { ...state, result: { ...result, phoneNumber: opened?.phoneNumber ?? '' } };
}
