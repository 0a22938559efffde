import type { JsonClient } from '../../adapters/services/http-json.js';
import type { TimelineEntry } from '../../adapters/db/queries.js';

const EXCERPTS_WAIT_MS = 3_000;

/** What the dispatcher's `GET /deliveries/:id` says of a notification's attempts (only what is used here). */
interface DispatcherDeliveries {
  deliveries: {
    webhook_id: string;
    company_id: string;
    attempt_log: { attempt: number; response_excerpt?: string | null }[];
  }[];
}

/**
 * The timeline with each webhook attempt's answer excerpt as the dispatcher's attempt log keeps it. Events no
 * longer carry excerpts (an endpoint's answer may echo personal data, and the log is out of erasure's reach):
 * the attempt log is where they live, for RETENTION_DELIVERIES_DAYS, blanked when the person is forgotten. An
 * excerpt the read model kept from an older event is never shown. When the dispatcher has none (aged out,
 * forgotten, unreachable), the attempts show without.
 */
export async function withAnswerExcerpts(
  dispatcher: JsonClient,
  companyId: string,
  subjectId: string,
  timeline: TimelineEntry[],
): Promise<TimelineEntry[]> {
  const attempts = timeline.filter((e) => e.type === 'WebhookAttempted');
  if (attempts.length === 0) return timeline;
  const excerpts = new Map<string, string>();
  try {
    // Bounded: a slow dispatcher delays the page by this at most (the client's own timeout is a test event's).
    const answer = await Promise.race([
      dispatcher.raw<DispatcherDeliveries>('GET', `/deliveries/${subjectId}`),
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), EXCERPTS_WAIT_MS).unref()),
    ]);
    if (answer?.status === 200) {
      for (const delivery of answer.body.deliveries) {
        if (delivery.company_id !== companyId) continue;
        for (const a of delivery.attempt_log) {
          if (a.response_excerpt) excerpts.set(`${delivery.webhook_id}/${a.attempt}`, a.response_excerpt);
        }
      }
    }
  } catch {
    // The dispatcher did not answer: the page shows the attempts without their answers.
  }
  return timeline.map((entry) => {
    if (entry.type !== 'WebhookAttempted') return entry;
    const { response_excerpt: _stored, ...data } = entry.data;
    const excerpt = excerpts.get(`${String(data.webhook_id)}/${String(data.attempt)}`);
    return { ...entry, data: excerpt ? { ...data, response_excerpt: excerpt } : data };
  });
}
